/* test_escape.c - report/escape.c: each target's special characters, and
** what each leaves as it is. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "report/escape.h"

/* what a helper writes for s after prefix (Markdown's block rule reads what was written before) */
static char out[1024];
static const char *written(void (*fn)(slU_Text *, const char *, size_t), const char *s) {
  slU_Text t = {0};
  slU_add_len(&t, "", 0);
  fn(&t, s, strlen(s));
  snprintf(out, sizeof out, "%s", t.s);
  free(t.s);
  return out;
}

static const char *md(const char *prefix, const char *s, const char *after, int block) {
  slU_Text t = {0};
  slU_add(&t, "%s", prefix);
  slR_md_escape(&t, s, after, block);
  snprintf(out, sizeof out, "%s", t.s + strlen(prefix));
  free(t.s);
  return out;
}

static void test_html_text(void) {
  CHECK_STREQ(written(slR_html_text_escape, "a & b < c > d"), "a &amp; b &lt; c &gt; d");
  CHECK_STREQ(written(slR_html_text_escape, "\"quoted\" 'single' $x$ *em* `c` &amp;"),
              "\"quoted\" 'single' $x$ *em* `c` &amp;amp;"); /* text: quotes and markup as they are */
  CHECK_STREQ(written(slR_html_text_escape, ""), "");
  /* n bytes, not up to a NUL: a piece of a longer text */
  slU_Text t = {0};
  slU_add_len(&t, "", 0);
  slR_html_text_escape(&t, "<b>ignored", 3);
  CHECK_STREQ(t.s, "&lt;b&gt;");
  free(t.s);
}

static void test_html_attribute(void) {
  CHECK_STREQ(written(slR_html_attr_escape, "a & b < c > d \" e"), "a &amp; b &lt; c &gt; d &quot; e");
  CHECK_STREQ(written(slR_html_attr_escape, "\"\"x\""), "&quot;&quot;x&quot;");
  CHECK_STREQ(written(slR_html_attr_escape, "'single' $x$ *em*"), "'single' $x$ *em*");
}

static void test_markdown_inline(void) {
  /* every markup character backslash-escaped, $ and HTML's specials as references, controls as spaces */
  CHECK_STREQ(md("", "\\`*_[]|~#", "", 0), "\\\\\\`\\*\\_\\[\\]\\|\\~\\#");
  CHECK_STREQ(md("", "$1 < 2 > 0 & \"q\"", "", 0), "&#36;1 &lt; 2 &gt; 0 &amp; \"q\"");
  CHECK_STREQ(md("",
                 "a\nb\tc\rd\x7f"
                 "e",
                 "", 0),
              "a b c d e");
  CHECK_STREQ(md("", "plain text, 3.5 (ok)", "", 0), "plain text, 3.5 (ok)");
  /* at the start of a block, a first character that would open one is a reference */
  CHECK_STREQ(md("", "- 3", "", 1), "&#45; 3");    /* a list item */
  CHECK_STREQ(md("", "-3", "", 1), "-3");          /* a negative number opens nothing */
  CHECK_STREQ(md("", "===", "", 1), "&#61;==");    /* a heading's underline */
  CHECK_STREQ(md("", "1.", " text", 1), "&#49;."); /* an ordered item, by what follows */
  CHECK_STREQ(md("", " x", "", 1), "&#32;x");      /* indentation */
  CHECK_STREQ(md("> ", "- 3", "", 1), "&#45; 3");  /* inside a quote, still the start of a block */
  CHECK_STREQ(md("text ", "- 3", "", 1), "- 3");   /* within a line: nothing to open */
  CHECK_STREQ(md("", "- 3", "", 0), "- 3");        /* not asked to */
}

static void test_markdown_tags(void) {
  CHECK_STREQ(written(slR_md_tags_escape, "<script>x</script> & **b** $y$ > q"),
              "&lt;script>x&lt;/script> & **b** $y$ > q"); /* the rest is the author's markup */
}

int main(void) {
  RUN(test_html_text);
  RUN(test_html_attribute);
  RUN(test_markdown_inline);
  RUN(test_markdown_tags);
  return check_summary();
}
