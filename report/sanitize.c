/*
** sanitize.c - notebook HTML made inert before it reaches report.html.
**
** Markdown cells and text/html outputs come from whoever wrote the
** notebook, and the report is opened (and printed by Chromium) on the
** machine of whoever runs `syslab report`. So the rendered HTML goes
** through an allow-list: known formatting tags keep known attributes, and
** everything else is dropped. Elements that load or run something
** (script, iframe, object, embed, style, svg, math, template, ...) are
** dropped with their content; other unknown tags (link, meta, base, form,
** input, ...) lose the tag and keep the text. No on* attribute survives,
** links may only be relative, #anchors, http(s) or mailto, and images may
** only be relative paths inside the report's folder or data:image URLs.
**
** Attribute values are decoded (character references) before they are
** checked and written back re-escaped, so what was checked is exactly
** what the browser will see: "jav&#x61;script:" is caught as javascript:.
** This is a small tokenizer, not an HTML5 parser; anything it does not
** understand becomes text (`<` is written as `&lt;`), which is safe.
*/
#include "sanitize.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "escape.h"
#include "slutil.h"

static const char *const allowed_tags[] = {
    "a",     "abbr",   "b",       "blockquote", "br",  "caption", "cite",  "code", "col",        "colgroup",
    "dd",    "del",    "details", "dfn",        "div", "dl",      "dt",    "em",   "figcaption", "figure",
    "h1",    "h2",     "h3",      "h4",         "h5",  "h6",      "hr",    "i",    "img",        "ins",
    "kbd",   "li",     "mark",    "ol",         "p",   "pre",     "q",     "s",    "samp",       "small",
    "span",  "strong", "sub",     "summary",    "sup", "table",   "tbody", "td",   "tfoot",      "th",
    "thead", "tr",     "tt",      "u",          "ul",  "var",     "wbr",   NULL};

/* dropped together with everything up to their end tag (void elements such
** as embed, frame, link and meta have none: they just lose the tag) */
static const char *const dropped_with_content[] = {
    "script",   "style",    "iframe",   "frameset", "object",      "applet", "noscript",  "noembed",
    "noframes", "template", "textarea", "select",   "title",       "xmp",    "svg",       "math",
    "audio",    "video",    "canvas",   "portal",   "fencedframe", "head",   "plaintext", NULL};

/* elements whose content the browser reads as raw text up to </name */
static const char *const raw_text[] = {"script",   "style", "iframe", "noembed",   "noframes",
                                       "textarea", "title", "xmp",    "plaintext", NULL};

static const char *const allowed_attrs[] = {
    "class",   "id",      "title", "lang", "dir",  "align", "valign", "style", "alt",  "width", "height",
    "colspan", "rowspan", "start", "type", "span", "scope", "name",   "open",  "href", "src",   NULL};

static int in_list(const char *const *list, const char *s) {
  for (; *list; list++)
    if (strcmp(*list, s) == 0) return 1;
  return 0;
}

/* ------------------------------------------------------------ decoding */

static const struct {
  const char *name;
  const char *text;
} entities[] = {{"amp", "&"},   {"lt", "<"},     {"gt", ">"},          {"quot", "\""}, {"apos", "'"},
                {"colon", ":"}, {"Tab", "\t"},   {"NewLine", "\n"},    {"sol", "/"},   {"period", "."},
                {"bsol", "\\"}, {"percnt", "%"}, {"nbsp", "\xc2\xa0"}, {NULL, NULL}};

static void add_codepoint(slU_Text *t, unsigned long c) {
  char b[4];
  if (c == 0 || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF)) c = 0xFFFD;
  if (c < 0x80) b[0] = (char)c, slU_add_len(t, b, 1);
  else if (c < 0x800) b[0] = (char)(0xC0 | c >> 6), b[1] = (char)(0x80 | (c & 0x3F)), slU_add_len(t, b, 2);
  else if (c < 0x10000)
    b[0] = (char)(0xE0 | c >> 12), b[1] = (char)(0x80 | ((c >> 6) & 0x3F)), b[2] = (char)(0x80 | (c & 0x3F)),
    slU_add_len(t, b, 3);
  else
    b[0] = (char)(0xF0 | c >> 18), b[1] = (char)(0x80 | ((c >> 12) & 0x3F)), b[2] = (char)(0x80 | ((c >> 6) & 0x3F)),
    b[3] = (char)(0x80 | (c & 0x3F)), slU_add_len(t, b, 4);
}

/* an attribute value as the browser reads it: numeric references and the
** named ones that could hide a URL's scheme are decoded; an unknown name is
** kept as text (it is written back as &amp;name, so the browser agrees) */
static char *decode(const char *s, size_t n) {
  slU_Text t = {0};
  slU_add_len(&t, "", 0);
  for (size_t i = 0; i < n;) {
    if (s[i] == '&' && i + 1 < n && s[i + 1] == '#') {
      size_t j = i + 2;
      int hex = j < n && (s[j] == 'x' || s[j] == 'X');
      if (hex) j++;
      unsigned long c = 0;
      size_t digits = 0;
      while (j < n && (hex ? isxdigit((unsigned char)s[j]) : isdigit((unsigned char)s[j]))) {
        if (c < 0x110000)
          c = c * (hex ? 16 : 10) +
              (unsigned long)(isdigit((unsigned char)s[j]) ? s[j] - '0' : (tolower((unsigned char)s[j]) - 'a' + 10));
        j++, digits++;
      }
      if (digits) {
        if (j < n && s[j] == ';') j++;
        add_codepoint(&t, c);
        i = j;
        continue;
      }
    } else if (s[i] == '&') {
      int found = 0;
      for (int e = 0; entities[e].name && !found; e++) {
        size_t l = strlen(entities[e].name);
        if (i + 1 + l <= n && strncmp(s + i + 1, entities[e].name, l) == 0) {
          slU_add(&t, "%s", entities[e].text);
          i += 1 + l + (i + 1 + l < n && s[i + 1 + l] == ';');
          found = 1;
        }
      }
      if (found) continue;
    }
    slU_add_len(&t, s + i, 1);
    i++;
  }
  return t.s;
}

static int hexval(int c) { return isdigit(c) ? c - '0' : tolower(c) - 'a' + 10; }

/* ------------------------------------------------------------- URLs */

/* the URL without the characters a browser ignores or strips (controls,
** whitespace), with %XX decoded, lower case: what the checks look at */
static char *url_view(const char *v) {
  size_t n = strlen(v);
  char *s = malloc(n + 1), *p = s;
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)v[i];
    if (c <= 0x20 || c == 0x7f) continue;
    if (c == '%' && i + 2 < n && isxdigit((unsigned char)v[i + 1]) && isxdigit((unsigned char)v[i + 2])) {
      c = (unsigned char)(hexval((unsigned char)v[i + 1]) * 16 + hexval((unsigned char)v[i + 2]));
      i += 2;
    }
    *p++ = (char)tolower(c);
  }
  *p = '\0';
  return s;
}

/* "" when the URL has no scheme, else the scheme */
static void scheme_of(const char *u, char *out, size_t size) {
  out[0] = '\0';
  const char *p = u;
  if (!isalpha((unsigned char)*p)) return;
  while (isalnum((unsigned char)*p) || *p == '+' || *p == '-' || *p == '.') p++;
  if (*p == ':' && (size_t)(p - u) < size) snprintf(out, size, "%.*s", (int)(p - u), u);
}

/* a path inside the report's folder: relative, no "..", no backslash */
static int inside_folder(const char *u) {
  if (u[0] == '/' || strchr(u, '\\')) return 0;
  for (const char *p = u; *p;) {
    const char *end = p + strcspn(p, "/?#");
    if (end - p == 2 && p[0] == '.' && p[1] == '.') return 0;
    if (*end != '/') break;
    p = end + 1;
  }
  return 1;
}

static int url_allowed(const char *tag, const char *attr, const char *value) {
  char *u = url_view(value), scheme[32];
  scheme_of(u, scheme, sizeof scheme);
  int ok;
  if (strcmp(attr, "src") == 0) /* loaded while printing: only the report's own files */
    ok = strcmp(tag, "img") == 0 && (scheme[0] ? strncmp(u, "data:image/", 11) == 0 : inside_folder(u));
  else if (scheme[0]) /* href: followed only when a reader clicks */
    ok = strcmp(scheme, "http") == 0 || strcmp(scheme, "https") == 0 || strcmp(scheme, "mailto") == 0;
  else ok = u[0] == '#' || inside_folder(u);
  free(u);
  return ok;
}

/* style="" may format but not load: no url(), @import, expressions, escapes */
static int style_allowed(const char *value) {
  char *u = url_view(value);
  int ok = !strstr(u, "url") && !strstr(u, "@") && !strstr(u, "\\") && !strstr(u, "expression") &&
           !strstr(u, "image") && !strstr(u, "/*");
  free(u);
  return ok;
}

/* -------------------------------------------------------------- tokens */

/* ` name="value"`, the value escaped */
static void add_attribute(slU_Text *t, const char *name, const char *value) {
  slU_add(t, " %s=\"", name);
  slR_html_attr_escape(t, value, strlen(value));
  slU_add(t, "\"");
}

static int name_char(char c) { return isalnum((unsigned char)c) || c == '-' || c == '_' || c == ':'; }

/* the end of the tag starting at p ('<'), honouring quoted attribute
** values; NULL when it never closes */
static const char *tag_end(const char *p) {
  char quote = 0;
  for (p++; *p; p++) {
    if (quote) {
      if (*p == quote) quote = 0;
    } else if (*p == '"' || *p == '\'') {
      quote = *p;
    } else if (*p == '>') {
      return p;
    }
  }
  return NULL;
}

/* writes the allowed attributes of the tag whose attributes span [p, end) */
static void add_attributes(slU_Text *t, const char *tag, const char *p, const char *end) {
  while (p < end) {
    while (p < end && (isspace((unsigned char)*p) || *p == '/')) p++;
    const char *n0 = p;
    while (p < end && !isspace((unsigned char)*p) && *p != '=' && *p != '>' && *p != '/') p++;
    char name[32];
    size_t nlen = (size_t)(p - n0);
    if (nlen == 0) {
      if (p < end) p++;
      continue;
    }
    snprintf(name, sizeof name, "%.*s", (int)(nlen < sizeof name ? nlen : sizeof name - 1), n0);
    for (char *c = name; *c; c++) *c = (char)tolower((unsigned char)*c);
    while (p < end && isspace((unsigned char)*p)) p++;
    const char *v0 = NULL, *v1 = NULL;
    if (p < end && *p == '=') {
      p++;
      while (p < end && isspace((unsigned char)*p)) p++;
      if (p < end && (*p == '"' || *p == '\'')) {
        char q = *p++;
        v0 = p;
        while (p < end && *p != q) p++;
        v1 = p;
        if (p < end) p++;
      } else {
        v0 = p;
        while (p < end && !isspace((unsigned char)*p)) p++;
        v1 = p;
      }
    }
    if (nlen >= sizeof name || !in_list(allowed_attrs, name)) continue;
    char *value = v0 ? decode(v0, (size_t)(v1 - v0)) : strdup("");
    int ok = 1;
    if (strcmp(name, "href") == 0 || strcmp(name, "src") == 0) ok = url_allowed(tag, name, value);
    else if (strcmp(name, "style") == 0) ok = style_allowed(value);
    if (ok) add_attribute(t, name, value);
    free(value);
  }
}

/* Past the element whose start tag ended just before p: after its end tag,
** nested elements of the same name counted, or at the end of the text. In
** HTML an end tag written `</name/>` is not counted; in SVG (xml) every end
** tag is, CDATA sections and comments are skipped whole, and `name.x` is
** another name. */
static const char *skip_nested(const char *p, const char *name, int xml) {
  size_t len = strlen(name);
  int depth = 1;
  while (*p) {
    int cdata = strncmp(p, "<![CDATA[", 9) == 0;
    if (xml && (cdata || strncmp(p, "<!--", 4) == 0)) {
      const char *e = strstr(p + 4, cdata ? "]]>" : "-->");
      p = e ? e + 3 : p + strlen(p);
      continue;
    }
    if (*p != '<') {
      p++;
      continue;
    }
    int closing = p[1] == '/';
    const char *n = p + 1 + closing;
    const char *e = tag_end(p);
    if (!e) return p + strlen(p);
    int self_closed = e[-1] == '/';
    if (strncasecmp(n, name, len) == 0 && !name_char(n[len]) && !(xml && n[len] == '.')) {
      if (closing) depth -= xml || !self_closed;
      else depth += !self_closed;
    }
    p = e + 1;
    if (depth == 0) return p;
  }
  return p;
}

/* where the content of <name> ends: after its matching end tag (nested
** ones counted), or at the end of the text */
static const char *skip_element(const char *p, const char *name) {
  size_t len = strlen(name);
  if (in_list(raw_text, name)) {
    for (; *p; p++)
      if (p[0] == '<' && p[1] == '/' && strncasecmp(p + 2, name, len) == 0 && !name_char(p[2 + len])) {
        const char *e = tag_end(p);
        return e ? e + 1 : p + strlen(p);
      }
    return p;
  }
  return skip_nested(p, name, 0);
}

int slR_html_drops_content(const char *tag, char *name, size_t size) {
  if (tag[0] != '<' || !isalpha((unsigned char)tag[1])) return 0;
  size_t n = 0;
  for (const char *p = tag + 1; name_char(*p) && n + 1 < size; p++) name[n++] = (char)tolower((unsigned char)*p);
  name[n] = '\0';
  return in_list(dropped_with_content, name);
}

char *slR_sanitize_html(const char *html) {
  slU_Text t = {0};
  slU_add_len(&t, "", 0);
  const char *p = html;
  while (*p) {
    if (*p != '<') {
      const char *lt = strchr(p, '<');
      size_t n = lt ? (size_t)(lt - p) : strlen(p);
      slU_add_len(&t, p, n);
      p += n;
      continue;
    }
    if (strncmp(p, "<!--", 4) == 0) { /* comments go */
      const char *e = strstr(p + 4, "-->");
      p = e ? e + 3 : p + strlen(p);
      continue;
    }
    int closing = p[1] == '/';
    const char *n0 = p + 1 + closing;
    if (p[1] == '!' || p[1] == '?') { /* doctype, CDATA, processing instructions */
      const char *e = tag_end(p);
      p = e ? e + 1 : p + strlen(p);
      continue;
    }
    if (!isalpha((unsigned char)*n0)) {
      slU_add(&t, "&lt;");
      p++;
      continue;
    }
    const char *e = tag_end(p);
    if (!e) { /* never closed: the rest is text */
      slU_add(&t, "&lt;");
      p++;
      continue;
    }
    const char *n1 = n0;
    while (name_char(*n1)) n1++;
    char name[32];
    size_t nlen = (size_t)(n1 - n0);
    snprintf(name, sizeof name, "%.*s", (int)(nlen < sizeof name ? nlen : sizeof name - 1), n0);
    for (char *c = name; *c; c++) *c = (char)tolower((unsigned char)*c);
    p = e + 1;
    if (nlen >= sizeof name) continue;
    if (in_list(dropped_with_content, name)) {
      if (!closing && (in_list(raw_text, name) || e[-1] != '/')) p = skip_element(p, name);
      continue;
    }
    if (!in_list(allowed_tags, name)) continue;
    if (closing) {
      slU_add(&t, "</%s>", name);
      continue;
    }
    slU_add(&t, "<%s", name);
    add_attributes(&t, name, n1, e);
    slU_add(&t, ">");
  }
  return t.s;
}

/* ------------------------------------------------------------------ SVG */

/* An SVG figure goes from a notebook's output to figures/NAME.svg, which
** whoever reads the report may open (a browser opening the file from the
** disk runs its scripts). So it is rebuilt from an allow-list too: drawing elements with presentation attributes;
** no script, style, foreignObject, animation, image or filter; references
** only to the figure's own ids (href="#id", url(#id)); no DOCTYPE (whose
** entities could name files), comments or processing instructions. Text
** keeps only the five XML entities and numeric references. */

/* clang-format off */
static const char *const svg_elements[] = {
    "svg", "g", "defs", "title", "desc", "path", "rect", "circle", "ellipse", "line", "polyline", "polygon", "text",
    "tspan", "textPath", "linearGradient", "radialGradient", "stop", "clipPath", "mask", "pattern", "marker",
    "symbol", "use", "switch", NULL};

/* dropped with their content (compared without case) */
static const char *const svg_dropped[] = {
    "script", "style", "foreignObject", "iframe", "object", "embed", "audio", "video", "canvas", "image", "feImage",
    "filter", "set", "animate", "animateMotion", "animateTransform", "animateColor", "mpath", "handler", "listener",
    "discard", "metadata", "font", "font-face", "cursor", "view", "html", "body", "head", "meta", "link", "base",
    "template", "math", NULL};

static const char *const svg_attrs[] = {
    "id", "class", "x", "y", "x1", "y1", "x2", "y2", "cx", "cy", "r", "rx", "ry", "fx", "fy", "width", "height", "d",
    "points", "transform", "viewBox", "preserveAspectRatio", "version", "fill", "fill-opacity", "fill-rule",
    "stroke", "stroke-width", "stroke-opacity", "stroke-dasharray", "stroke-dashoffset", "stroke-linecap",
    "stroke-linejoin", "stroke-miterlimit", "opacity", "color", "visibility", "display", "font-family",
    "font-size", "font-weight", "font-style", "font-variant", "text-anchor", "dominant-baseline",
    "alignment-baseline", "baseline-shift", "letter-spacing", "word-spacing", "text-decoration", "dx", "dy",
    "rotate", "textLength", "lengthAdjust", "offset", "stop-color", "stop-opacity", "gradientUnits",
    "gradientTransform", "spreadMethod", "clip-path", "clip-rule", "clipPathUnits", "mask", "maskUnits",
    "maskContentUnits", "marker-start", "marker-mid", "marker-end", "markerWidth", "markerHeight", "markerUnits",
    "refX", "refY", "orient", "patternUnits", "patternContentUnits", "patternTransform", "vector-effect",
    "shape-rendering", "text-rendering", "image-rendering", "overflow", "xml:space", "style", "href",
    "xlink:href", "xmlns", "xmlns:xlink", "startOffset", "method", "spacing", "side", "pathLength", NULL};
/* clang-format on */

static int in_list_nocase(const char *const *list, const char *s) {
  for (; *list; list++)
    if (strcasecmp(*list, s) == 0) return 1;
  return 0;
}

/* "#name": a reference to the figure's own element */
static int local_ref(const char *v) {
  while (isspace((unsigned char)*v)) v++;
  if (*v != '#' || !v[1]) return 0;
  for (v++; *v && !isspace((unsigned char)*v); v++)
    if (!isalnum((unsigned char)*v) && *v != '-' && *v != '_' && *v != '.' && *v != ':') return 0;
  while (isspace((unsigned char)*v)) v++;
  return *v == '\0';
}

/* a value may name a paint server or clip of the figure, url(#id), and
** nothing outside it */
static int svg_value_allowed(const char *name, const char *value) {
  if (strcmp(name, "href") == 0 || strcmp(name, "xlink:href") == 0) return local_ref(value);
  if (strcmp(name, "xmlns") == 0) return strcmp(value, "http://www.w3.org/2000/svg") == 0;
  if (strcmp(name, "xmlns:xlink") == 0) return strcmp(value, "http://www.w3.org/1999/xlink") == 0;
  if (strcmp(name, "style") == 0) return style_allowed(value);
  char *u = url_view(value);
  int ok = 1;
  for (const char *p = strstr(u, "url"); p && ok; p = strstr(p + 3, "url")) {
    const char *q = p + 3;
    if (*q != '(') continue;
    const char *close = strchr(q, ')');
    if (!close || q[1] != '#') {
      ok = 0;
      break;
    }
    char ref[256];
    snprintf(ref, sizeof ref, "%.*s", (int)(close - q - 1 < 255 ? close - q - 1 : 255), q + 1);
    ok = local_ref(ref);
  }
  /* no scheme anywhere (javascript:, data:, file:) and no escapes */
  if (ok && (strstr(u, "javascript:") || strstr(u, "data:") || strstr(u, "file:") || strstr(u, "\\") ||
             strstr(u, "expression")))
    ok = 0;
  free(u);
  return ok;
}

/* XML text as it is, except that an '&' must start one of the five XML
** entities or a numeric reference (anything else, an entity the dropped
** DOCTYPE declared included, is written as text) */
static void add_xml_text(slU_Text *t, const char *s, size_t n) {
  for (size_t i = 0; i < n; i++) {
    if (s[i] == '<') {
      slU_add(t, "&lt;");
    } else if (s[i] == '&') {
      size_t j = i + 1;
      int ok = 0;
      if (j < n && s[j] == '#') {
        j++;
        int hex = j < n && (s[j] == 'x' || s[j] == 'X');
        if (hex) j++;
        size_t d = j;
        while (j < n && (hex ? isxdigit((unsigned char)s[j]) : isdigit((unsigned char)s[j]))) j++;
        ok = j > d && j < n && s[j] == ';';
      } else {
        static const char *const xml_entities[] = {"amp;", "lt;", "gt;", "quot;", "apos;", NULL};
        for (int e = 0; xml_entities[e] && !ok; e++)
          ok = n - j >= strlen(xml_entities[e]) && strncmp(s + j, xml_entities[e], strlen(xml_entities[e])) == 0;
      }
      slU_add(t, ok ? "&" : "&amp;");
    } else {
      slU_add_len(t, s + i, 1);
    }
  }
}

/* the attributes of an SVG tag, spanning [p, end), that the list allows */
static void add_svg_attributes(slU_Text *t, const char *p, const char *end) {
  while (p < end) {
    while (p < end && (isspace((unsigned char)*p) || *p == '/')) p++;
    const char *n0 = p;
    while (p < end && !isspace((unsigned char)*p) && *p != '=' && *p != '/') p++;
    size_t nlen = (size_t)(p - n0);
    if (nlen == 0) {
      if (p < end) p++;
      continue;
    }
    char name[40];
    snprintf(name, sizeof name, "%.*s", (int)(nlen < sizeof name ? nlen : sizeof name - 1), n0);
    while (p < end && isspace((unsigned char)*p)) p++;
    if (p >= end || *p != '=') continue; /* XML has no attribute without a value */
    p++;
    while (p < end && isspace((unsigned char)*p)) p++;
    if (p >= end || (*p != '"' && *p != '\'')) {
      while (p < end && !isspace((unsigned char)*p)) p++;
      continue;
    }
    char q = *p++;
    const char *v0 = p;
    while (p < end && *p != q) p++;
    const char *v1 = p;
    if (p < end) p++;
    if (nlen >= sizeof name || !in_list(svg_attrs, name)) continue;
    char *value = decode(v0, (size_t)(v1 - v0));
    if (svg_value_allowed(name, value)) add_attribute(t, name, value);
    free(value);
  }
}

char *slR_sanitize_svg(const char *svg) {
  slU_Text t = {0};
  slU_add_len(&t, "", 0);
  const char *p = svg;
  /* the open elements, so that every end tag written matches its start tag */
  const char *open[256];
  int depth = 0, seen_root = 0;
  while (*p) {
    if (*p != '<') {
      const char *lt = strchr(p, '<');
      size_t n = lt ? (size_t)(lt - p) : strlen(p);
      if (depth > 0) add_xml_text(&t, p, n); /* text outside the root is dropped */
      p += n;
      continue;
    }
    if (strncmp(p, "<!--", 4) == 0) {
      const char *e = strstr(p + 4, "-->");
      p = e ? e + 3 : p + strlen(p);
      continue;
    }
    if (strncmp(p, "<![CDATA[", 9) == 0) {
      const char *e = strstr(p + 9, "]]>");
      size_t n = e ? (size_t)(e - p - 9) : strlen(p + 9);
      if (depth > 0) slR_html_text_escape(&t, p + 9, n);
      p = e ? e + 3 : p + strlen(p);
      continue;
    }
    if (strncasecmp(p, "<!DOCTYPE", 9) == 0) { /* with its internal subset, if any */
      const char *e = tag_end(p), *subset = strchr(p, '[');
      if (subset && e && subset < e) {
        const char *close = strstr(subset, "]");
        while (close && (close = strchr(close, ']')) != NULL) {
          const char *q = close + 1;
          while (isspace((unsigned char)*q)) q++;
          if (*q == '>') {
            e = q;
            break;
          }
          close++;
        }
        if (!close) e = NULL;
      }
      p = e ? e + 1 : p + strlen(p);
      continue;
    }
    if (p[1] == '?' || p[1] == '!') { /* processing instructions, other declarations */
      const char *e = tag_end(p);
      p = e ? e + 1 : p + strlen(p);
      continue;
    }
    int closing = p[1] == '/';
    const char *n0 = p + 1 + closing, *e = tag_end(p);
    if (!e || !isalpha((unsigned char)*n0)) { /* not a tag: the rest is not SVG */
      break;
    }
    const char *n1 = n0;
    while (name_char(*n1) || *n1 == '.') n1++;
    char name[40];
    size_t nlen = (size_t)(n1 - n0);
    snprintf(name, sizeof name, "%.*s", (int)(nlen < sizeof name ? nlen : sizeof name - 1), n0);
    int empty = e[-1] == '/';
    p = e + 1;
    if (nlen >= sizeof name) continue;
    if (in_list_nocase(svg_dropped, name)) {
      if (!closing && !empty) p = skip_nested(p, name, 1);
      continue;
    }
    /* the root is the first element, and it is an svg */
    if (!seen_root && (closing || strcmp(name, "svg") != 0)) continue;
    if (!in_list(svg_elements, name)) continue; /* the tag goes, its content stays */
    if (closing) {
      int at = depth - 1;
      while (at >= 0 && strcmp(open[at], name) != 0) at--;
      if (at < 0) continue; /* an end tag of nothing open */
      while (depth > at) slU_add(&t, "</%s>", open[--depth]);
      if (depth == 0) break; /* the end of the root: nothing after it */
      continue;
    }
    if (!empty && depth == (int)(sizeof open / sizeof *open)) continue; /* deeper than any figure needs */
    seen_root = 1;
    slU_add(&t, "<%s", name);
    add_svg_attributes(&t, n1, empty ? e - 1 : e);
    if (empty) {
      slU_add(&t, "/>");
      if (depth == 0) break;
    } else {
      slU_add(&t, ">");
      for (int k = 0; svg_elements[k]; k++)
        if (strcmp(svg_elements[k], name) == 0) open[depth++] = svg_elements[k];
    }
  }
  /* what is still open is closed, so the file is well formed */
  while (depth > 0) slU_add(&t, "</%s>", open[--depth]);
  if (!seen_root) {
    free(t.s);
    return NULL;
  }
  slU_Text out = {0};
  slU_add(&out, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n%s\n", t.s);
  free(t.s);
  return out.s;
}
