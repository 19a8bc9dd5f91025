/*
** slutil.h - small helpers the whole program shares: the growable string,
** the clock, fixed-width bytes, files a user names, numbers as text.
**
** Design. These declarations know nothing of the interpreter: no value, no
** session, no call. The engine's files use them (slcommand.h, the
** command-author API, includes this header), and so do the drivers above
** the engine (the kernel, the report, the command line), which include it
** beside syslab.h where they build text, time something, read a file a
** user named or write a number as the language does. Keeping them apart
** from syslab.h lets a reader of a file see whether it drives the engine,
** only borrows its helpers, or both. The functions live in engine/lang/
** (text.c, clock.c, codec.c, file.c, layout.c, lex.c, suggest.c, value.c,
** format.c).
*/
#ifndef SLUTIL_H
#define SLUTIL_H

#include <stddef.h>
#include <stdint.h>

/* -------------------------------------------------------- growable string */

/* A growable string, for building help pages, tables, scripts and reports
** piece by piece (lang/text.c). Start from {0}; it is always NUL-terminated
** once anything was added; the owner frees `s`. */
typedef struct slU_Text {
  char *s;
  size_t n, cap;
} slU_Text;

void slU_add_len(slU_Text *t, const char *s, size_t n);
void slU_add(slU_Text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* seconds on the monotonic clock (lang/clock.c): for timings and deadlines */
double slU_now(void);

/* ------------------------------------------------------ fixed-width bytes */

/* Fixed-width pieces for encoders (lang/codec.c), and a reader that checks
** every length: a read past the end sets `bad` and returns zeros. Byte
** order is fixed (little endian), so the bytes mean the same on every
** machine. */
void slU_put_u8(slU_Text *t, unsigned v);
void slU_put_u32(slU_Text *t, uint32_t v);
void slU_put_u64(slU_Text *t, uint64_t v);
void slU_put_f32(slU_Text *t, float v);
void slU_put_f64(slU_Text *t, double v);
void slU_put_str(slU_Text *t, const char *s);             /* u32 length, then the bytes */
void slU_put_bytes(slU_Text *t, const void *p, size_t n); /* u64 length, then the bytes */

typedef struct slU_Reader {
  const char *p;
  size_t n, at;
  int bad;
} slU_Reader;
unsigned slU_get_u8(slU_Reader *r);
uint32_t slU_get_u32(slU_Reader *r);
uint64_t slU_get_u64(slU_Reader *r);
float slU_get_f32(slU_Reader *r);
double slU_get_f64(slU_Reader *r);
/* copies a string into out (size bytes, truncating); 0, or -1 if bad */
int slU_get_str(slU_Reader *r, char *out, size_t size);
/* a pointer into the reader's bytes and their length, or NULL if bad */
const char *slU_get_bytes(slU_Reader *r, size_t *n);
/* reads n floats (stored as f32) into out */
void slU_get_f32s(slU_Reader *r, float *out, size_t n);
void slU_put_f32s(slU_Text *t, const float *v, size_t n);

/* ------------------------------------------------------ files a user names */

/* Every file a user names (a command's path, the command line's files, a
** notebook, a connection file) is opened here and nowhere else (lang/file.c):
** without blocking, and only when it is a regular file, checked again on
** the descriptor. `flags` are open(2)'s: O_RDONLY, or O_WRONLY with O_CREAT,
** O_EXCL, O_TRUNC, O_APPEND or O_NOFOLLOW. Returns the descriptor (close on
** exec) and the file's size in *size (may be NULL), or -1 with err naming
** the path, what it is and what is allowed: `what` names what the file
** should be ("a CSV file"). A FIFO, socket, device or folder is refused
** without being opened. */
int slF_open(const char *path, int flags, const char *what, size_t *size, char *err, size_t errlen);
/* The whole of a file a user named, through slF_open (NUL-terminated, caller
** frees; *len without the terminator), or NULL with err. Also refuses a file
** too large for the memory budget and, when text=1, one holding NUL bytes;
** reads no more than the size the file had when opened; stops when
** interrupted. */
char *slF_read_file(const char *path, const char *what, int text, size_t *len, char *err, size_t errlen);
/* n bytes written whole to a file a user named, or nothing: under a
** temporary name beside it (through slF_open), flushed to disk, then renamed
** over path. 0, or -1 with err naming the path and why. */
int slF_write_file(const char *path, const void *bytes, size_t n, const char *what, char *err, size_t errlen);

/* ------------------------------------------------------ the program's files */

/* A file or folder that ships with the program, by its place under the
** install prefix ("share/syslab/kernelspec", "lib/syslab/syslab_mpi.so"):
** found beside the running program (<prefix>/bin/syslab), else at
** `build_tree`, its place for a program run from its build folder (NULL
** in a program built for installation; lang/layout.c). 0 with its path in
** out; -1 with out the place it would have under the prefix, for messages. */
int sl_program_file(const char *installed, const char *build_tree, char *out, size_t size);

/* ------------------------------------ numbers and names as the language has them */

/* 1 and *out set when the whole of s is a number in the language's grammar
** (123, -4.5, 1e-3, 1_000; an optional sign), else 0: "0x10", "nan", "inf"
** and " 1" are not numbers. */
int sl_parse_number(const char *s, double *out);
/* A count or a number of seconds as a command line or a cell option gives it
** (lang/lex.c): decimal digits only, no sign, fraction, exponent or '_',
** within lo..hi (lo >= 0). 1 and *out set, else 0: "3x", "2.9", "1e9", ""
** and "-1" are refused, never read as their leading digits. */
int sl_parse_whole(const char *s, long lo, long hi, long *out);
/* "Did you mean": the candidate (a NULL-terminated list) closest to name by
** edit distance, when close enough for its length; else NULL (lang/suggest.c,
** the same rule as the language's suggestions) */
const char *sl_closest(const char *name, const char *const *candidates);
/* Numbers as the language prints them: integers plainly, others with %.9g
** so every float32 value round-trips exactly. */
void sl_format_number(double x, char *out, size_t size);
/* x as the language prints it, for messages: SL_NUM(x) is a string that
** lives to the end of the enclosing block ("4294967296", "nan", "0.25"),
** so an error says what the user wrote, not %g's 4.2949673e+09 or -nan */
const char *sl_number_text(double x, char *buf, size_t size);
#define SL_NUM(x) sl_number_text((x), (char[40]){0}, 40)
/* The fewest significant digits that read back as the same double
** ("0.1", "9007199254740992", "1e+300", "nan"): the exact value in text
** (lang/format.c). */
void sl_format_exact(double x, char *out, size_t size);
/* x by a subset of Python's format spec, [+|-][z][,|_][.precision][f|e|g|%|d],
** as Python's format() writes it; no type: as the language prints it.
** Caller frees; NULL with err for a spec it does not read or a 'd' of a
** number that is not whole. sl_format_spec_check reads the spec alone. */
char *sl_format_spec(double x, const char *spec, char *err, size_t errlen);
int sl_format_spec_check(const char *spec, char *err, size_t errlen);

#endif
