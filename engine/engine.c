/*
** engine.c - the engine's start: the one file that knows every domain.
**
** The language core knows no domain above it, so the list of domains is
** made here, at the top of the engine, in the order of the layers (which
** is also the order of `help` and of docs/commands.md), and handed down to
** the registry once. Each domain may then hook itself into the layers
** below it (its open function), so no layer names one above it.
*/
#include <pthread.h>

#include "slcommand.h"

static const sl_Domain *const domains[] = {&slB_domain, &slT_domain, &slP_domain, &slK_domain,
                                           &slM_domain, &slL_domain, &slQ_domain, &slS_domain};

static void start(void) {
  sl_registry_use(domains, sizeof domains / sizeof domains[0]);
  for (size_t i = 0; i < sizeof domains / sizeof domains[0]; i++)
    if (domains[i]->open) domains[i]->open();
}

void sl_init(void) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, start);
}
