#!/bin/sh
# check-layers.sh: the layer rule, read from the tree itself. Each folder of
# webhook/ is a layer; a module's file includes project headers by folder
# ("base/dynbuf.h"), and only from its own folder and those the map in
# webhook/README.md ("Layers") lets it use. That map is the one place the
# rule is written: this script reads it.
#
#   sh test/check-layers.sh [ROOT]     ROOT: the checkout (default: this one)
#
# Exit 0 when the tree obeys the rule; 1 with one line per problem
# (file:line and the include) when it does not. Needs only sh, awk and find.
# Only #include "..." lines are read; <...> headers are not project headers.

set -eu

root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
dir=$root/webhook
[ -d "$dir" ] || { echo "check-layers: no $dir" >&2; exit 2; }

# folder: the folders its files may include from (itself always), read from
# the map in webhook/README.md (the block after the "<!-- layers:" line), so
# that the rule is written once.
uses=$(awk '/^<!-- layers:/ { want = 1; next }
    want && /^```text/ { inside = 1; next }
    inside && /^```/ { exit }
    inside { n = split($0, w, "uses:"); if (n != 2) next
             split(w[1], f, " "); v = w[2]; gsub(/(^ +| +$)/, "", v); if (v == "-") v = ""
             print f[1] ": " v }' "$dir/README.md")
[ -n "$uses" ] || { echo "check-layers: no layer map in $dir/README.md (a \`\`\`text block after <!-- layers: -->)" >&2; exit 2; }

# Paths are passed on stdin, one a line, so none is read as an awk option.
cd "$dir"
find . -mindepth 1 \( -name '*.c' -o -name '*.h' -o -type d \) -print | sed 's|^\./||' | sort |
awk -v uses="$uses" '
BEGIN {
    n = split(uses, l, "\n")
    for (i = 1; i <= n; i++) {
        if (split(l[i], f, ":") != 2) continue
        known[f[1]] = 1; nk++
        allow[f[1] " " f[1]] = 1
        m = split(f[2], g, " ")
        for (j = 1; j <= m; j++) allow[f[1] " " g[j]] = 1
    }
    bad = 0; nfiles = 0
}
# A folder: one of the table, one level deep.
!/\.[ch]$/ {
    if ($0 ~ /\// || !($0 in known)) {
        printf "webhook/%s: a folder that is no layer: add it to the map in webhook/README.md, or move its files into a layer\n", $0
        bad = 1
    }
    next
}
{ files[$0] = 1; list[++nfiles] = $0 }
END {
    for (k = 1; k <= nfiles; k++) {
        file = list[k]
        if (split(file, p, "/") != 2) {
            printf "webhook/%s: outside any layer folder: move it into one (webhook/README.md, \"Layers\")\n", file
            bad = 1
            continue
        }
        from = p[1]; ln = 0
        while ((getline line < file) > 0) {
            ln++
            if (line !~ /^[ \t]*#[ \t]*include[ \t]*"/) continue
            inc = line
            sub(/^[ \t]*#[ \t]*include[ \t]*"/, "", inc)
            sub(/".*/, "", inc)
            if (split(inc, q, "/") != 2 || inc !~ /\.h$/) {
                printf "webhook/%s:%d: %s: include a module header by its folder, as \"base/dynbuf.h\"\n", file, ln, line
                bad = 1
                continue
            }
            if (!(inc in files)) {
                printf "webhook/%s:%d: %s: webhook/%s does not exist\n", file, ln, line, inc
                bad = 1
                continue
            }
            if ((from " " q[1]) in allow) continue
            printf "webhook/%s:%d: %s: %s may not include %s (the map in webhook/README.md says what each folder may use)\n", file, ln, line, from, q[1]
            bad = 1
        }
        close(file)
    }
    if (bad) exit 1
    nm = 0
    for (fl in files) { m = fl; sub(/\.[ch]$/, "", m); if (!(m in mods)) { mods[m] = 1; nm++ } }
    printf "check-layers: %d modules in %d folders, every include goes to a folder its own may use\n", nm, nk
}'
