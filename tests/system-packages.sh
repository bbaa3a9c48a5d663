#!/usr/bin/env bash
# Debian packages the test suite uses: Chromium (browser tests), bubblewrap (sandboxed grading),
# npm (rebuilding the datasets), a font with Chinese glyphs (fonts-wqy-microhei, about 5 MB: the zh edition's
# figures drawn in Chinese; seqlab.i18n.cjk_font finds it even where matplotlib's font cache predates it).
# Installed when missing and we may (root with apt-get); otherwise the tests that need them say so and are skipped.
set -u
missing=()
command -v chromium >/dev/null || missing+=(chromium)
command -v bwrap >/dev/null || missing+=(bubblewrap)
command -v npm >/dev/null || missing+=(npm)
# a Chinese font of seqlab.i18n.CJK_FONTS that fontconfig knows; without fontconfig, WenQuanYi's own file
{ fc-list :lang=zh family 2>/dev/null | grep -qE "Noto Sans CJK|Source Han Sans|WenQuanYi" ||
  [ -e /usr/share/fonts/truetype/wqy/wqy-microhei.ttc ]; } || missing+=(fonts-wqy-microhei)
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "installing Debian packages: ${missing[*]}"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
else
  echo "note: ${missing[*]} not installed (needs root and apt-get); the tests that need them will be skipped" >&2
fi
exit 0
