#!/usr/bin/env bash
# Renders a report.html in headless Chromium (Debian's chromium package) and checks that
# the page is drawn: the screenshot is not blank, the curves' colours cover enough pixels,
# and the rendered DOM holds the expected texts and both charts.
#
# usage: tests/report_browser.sh [--out DIR] [--color RRGGBB:MIN_PIXELS]... [--expect TEXT]... REPORT.html
#   --out DIR     where the screenshot (report.png), the DOM (dom.html) and the browser log go
#                 (default: a new temporary folder, removed on success)
#   --color C:N   at least N pixels of exactly colour C in the screenshot (repeatable)
#   --expect T    the DOM after rendering contains text T (repeatable)
# Exit status: 0 pass, 1 fail (the reason on stderr), 77 skip (chromium not installed).
set -euo pipefail

out=""
colors=()
expects=()
report=""
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out="$2"; shift 2 ;;
    --color) colors+=("$2"); shift 2 ;;
    --expect) expects+=("$2"); shift 2 ;;
    -*) echo "report_browser: unknown option $1" >&2; exit 2 ;;
    *) report="$1"; shift ;;
  esac
done
[ -n "$report" ] && [ -f "$report" ] || { echo "report_browser: FAIL: no report file '$report'" >&2; exit 1; }

browser=""
for b in chromium chromium-browser; do
  if command -v "$b" >/dev/null 2>&1; then browser="$b"; break; fi
done
if [ -z "$browser" ]; then
  echo "report_browser: SKIP: chromium is not installed (scripts/setup.sh installs it)"
  exit 77
fi

if ! command -v python3 >/dev/null 2>&1; then
  echo "report_browser: FAIL: chromium is installed but python3, needed to decode the screenshot, is not" >&2
  exit 1
fi

keep=1
if [ -z "$out" ]; then
  out="$(mktemp -d "${TMPDIR:-/tmp}/vp_report_browser.XXXXXX")"
  keep=0
fi
mkdir -p "$out"
url="file://$(cd "$(dirname "$report")" && pwd)/$(basename "$report")"
flags=(--headless --no-sandbox --disable-gpu --disable-dev-shm-usage --hide-scrollbars
       --no-first-run --user-data-dir="$out/profile" --window-size=1200,1600)

# render twice: a screenshot, and the DOM after layout
rm -f "$out/report.png" "$out/dom.html"
timeout 120 "$browser" "${flags[@]}" --screenshot="$out/report.png" "$url" >"$out/browser.log" 2>&1 || true
timeout 120 "$browser" "${flags[@]}" --dump-dom "$url" >"$out/dom.html" 2>>"$out/browser.log" || true
if [ ! -s "$out/report.png" ] || [ ! -s "$out/dom.html" ]; then
  echo "report_browser: FAIL: $browser wrote no screenshot or no DOM; its log:" >&2
  tail -20 "$out/browser.log" >&2
  exit 1
fi

# decode the PNG with the standard library and check pixels and texts
status=0
python3 - "$out/report.png" "$out/dom.html" "${#colors[@]}" "${colors[@]}" "${expects[@]}" <<'PY' || status=$?
import re, struct, sys, zlib
from itertools import accumulate

def decode(path):
    """8-bit RGB/RGBA non-interlaced PNG -> (width, height, bytes per pixel, pixel bytes)."""
    d = open(path, 'rb').read()
    if d[:8] != b'\x89PNG\r\n\x1a\n':
        raise SystemExit('FAIL: screenshot is not a PNG')
    pos, idat, w, h, bpp = 8, [], 0, 0, 0
    while pos < len(d):
        n, = struct.unpack('>I', d[pos:pos + 4])
        typ, body = d[pos + 4:pos + 8], d[pos + 8:pos + 8 + n]
        pos += 12 + n
        if typ == b'IHDR':
            w, h, depth, ctype, _, _, inter = struct.unpack('>IIBBBBB', body)
            if depth != 8 or ctype not in (2, 6) or inter != 0:
                raise SystemExit('FAIL: unsupported PNG (depth %d, colour type %d, interlace %d)' % (depth, ctype, inter))
            bpp = 3 if ctype == 2 else 4
        elif typ == b'IDAT':
            idat.append(body)
    raw = zlib.decompress(b''.join(idat))
    rl = w * bpp
    img, prev = bytearray(rl * h), bytes(rl)
    hi = int.from_bytes(b'\x80' * rl, 'little')
    lo = int.from_bytes(b'\x7f' * rl, 'little')
    for y in range(h):
        f, row = raw[y * (rl + 1)], bytearray(raw[y * (rl + 1) + 1:(y + 1) * (rl + 1)])
        if f == 1:    # Sub: a running sum per channel
            for c in range(bpp):
                row[c::bpp] = bytes(v & 255 for v in accumulate(row[c::bpp]))
        elif f == 2:  # Up: byte-wise add without carries, on whole rows
            a, b = int.from_bytes(row, 'little'), int.from_bytes(prev, 'little')
            row = bytearray((((a & lo) + (b & lo)) ^ ((a ^ b) & hi)).to_bytes(rl, 'little'))
        elif f == 3:  # Average
            for i in range(rl):
                row[i] = (row[i] + (((row[i - bpp] if i >= bpp else 0) + prev[i]) >> 1)) & 255
        elif f == 4:  # Paeth
            for i in range(rl):
                a, c = (row[i - bpp], prev[i - bpp]) if i >= bpp else (0, 0)
                b = prev[i]
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                row[i] = (row[i] + (a if pa <= pb and pa <= pc else (b if pb <= pc else c))) & 255
        elif f != 0:
            raise SystemExit('FAIL: bad PNG filter %d' % f)
        img[y * rl:(y + 1) * rl] = row
        prev = bytes(row)
    return w, h, bpp, bytes(img)

png, dom_path, ncol = sys.argv[1], sys.argv[2], int(sys.argv[3])
colors, expects = sys.argv[4:4 + ncol], sys.argv[4 + ncol:]
w, h, bpp, img = decode(png)
fails = []
if (w, h) != (1200, 1600):
    fails.append('screenshot is %dx%d, expected 1200x1600' % (w, h))

# not blank: enough pixels differ from white (alpha, if any, ignored)
px = [img[i::bpp] for i in range(3)]
nonwhite = sum(1 for r, g, b in zip(*px) if r != 255 or g != 255 or b != 255)
frac = nonwhite / float(w * h)
if frac < 0.02:
    fails.append('screenshot is blank: %.4f of pixels are not white' % frac)
print('report_browser: %dx%d screenshot, %.2f %% of pixels not white' % (w, h, 100 * frac))

# the curves: pixels of exactly each colour, at pixel boundaries
for spec in colors:
    hexcol, need = spec.split(':')
    rgb = bytes.fromhex(hexcol.lstrip('#'))
    n = sum(1 for m in re.finditer(re.escape(rgb), img) if m.start() % bpp == 0)
    print('report_browser: colour #%s: %d pixels (need %s)' % (hexcol.lstrip('#'), n, need))
    if n < int(need):
        fails.append('colour #%s covers %d pixels, fewer than %s' % (hexcol.lstrip('#'), n, need))

# the rendered DOM: both charts and every expected text
dom = open(dom_path, encoding='utf-8', errors='replace').read()
if dom.count('<svg') < 2 or '<polyline' not in dom:
    fails.append('the DOM lacks the two SVG charts')
for t in expects:
    if t not in dom:
        fails.append('the DOM lacks the text %r' % t)
print('report_browser: DOM %d characters, %d expected texts checked' % (len(dom), len(expects)))
if fails:
    for f in fails:
        print('report_browser: FAIL: ' + f, file=sys.stderr)
    sys.exit(1)
print('report_browser: PASS')
PY
if [ "$status" -ne 0 ]; then
  echo "report_browser: screenshot and DOM kept in $out" >&2
  exit 1
fi
[ "$keep" -eq 1 ] || rm -rf "$out"
exit 0
