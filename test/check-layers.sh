#!/bin/sh
# check-layers.sh: every webhook/*.c and *.h includes project headers of its
# own layer or a lower one only (webhook/README.md, "Layers").
#
#   sh test/check-layers.sh [ROOT]     ROOT: the checkout (default: this one)
#
# Exit 0 when the tree obeys the table; 1 with one line per problem
# (file:line and the include) when it does not. Needs only sh, awk and sed.
# Only #include "..." lines are read; <...> headers are not project headers.

set -eu

root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
dir=$root/webhook
[ -d "$dir" ] || { echo "check-layers: no $dir" >&2; exit 2; }

# module layer -- keep in step with webhook/README.md.
#   0 base       pure helpers: memory, text, numbers, JSON text; no I/O
#   1 admission  AdmissionReview in, JSON Patch out; libc and cJSON only
#   2 edges      files, clock, threads, logging, network, shared state
#   3 server     the serving process's context (struct server)
#   4 cmd        the command line (main.c, cmd.c, cmd_*.c); not in the unit-test library
layers='
arena 0
base64 0
decimal 0
err 0
dynbuf 0
jsoncheck 0
jsonraw 0
jsonw 0
k8sname 0
quantity 0
strmap 0
trace 0
utf8 0
version 0
explain 1
labelsel 1
mutannot 1
mutate 1
mutate_ctx 1
mutcaps 1
mutchoose 1
mutdetect 1
mutenv 1
mutns 1
mutpath 1
mutplace 1
mutreport 1
muttarget 1
mutvol 1
mutwarn 1
nccl 1
patch 1
podjson 1
podsec 1
profiles 1
report 1
review 1
select 1
target 1
bodybuf 2
certs 2
clientauth 2
cmwatch 2
lastgood 2
podsecconf 2
connguard 2
docs 2
events 2
filewatch 2
framing 2
fsutil 2
kubeapi 2
log 2
logq 2
lookups 2
metrics 2
monotime 2
ncdetect 2
reloader 2
stopguard 2
store 2
tlscreds 2
server 3
cmd 4
cmd_certs 4
cmd_mutate 4
cmd_nccl_detect 4
cmd_profiles 4
cmd_serve 4
cmd_serve_flags 4
main 4
'

# Known exceptions: "FILE HEADER", an upward include that is allowed, each
# with a comment saying why it exists. None today. An entry that no longer
# matches any include is reported, so the list cannot go stale.
exceptions='
'

# File names are passed on stdin, one a line, so none is read as an awk
# option or assignment.
ls "$dir" | sed -n 's/^\(.*\.[ch]\)$/\1/p' | sort | awk -v dir="$dir" -v layers="$layers" -v exceptions="$exceptions" '
BEGIN {
    name[0] = "base"; name[1] = "admission"; name[2] = "edges"; name[3] = "server"; name[4] = "cmd"
    n = split(layers, l, "\n")
    for (i = 1; i <= n; i++) {
        if (split(l[i], f, " ") == 2) { layer[f[1]] = f[2]; seen[f[1]] = 0 }
    }
    n = split(exceptions, l, "\n")
    for (i = 1; i <= n; i++) {
        sub(/#.*/, "", l[i])
        if (split(l[i], f, " ") == 2) { exc[f[1] " " f[2]] = 1; used[f[1] " " f[2]] = 0 }
    }
    bad = 0
}
{
    file = $0
    mod = file; sub(/\.[ch]$/, "", mod)
    if (!(mod in layer)) {
        printf "webhook/%s: module %s has no layer: add %s to the layer table in test/check-layers.sh and webhook/README.md\n", file, mod, mod
        bad = 1
        next
    }
    seen[mod] = 1
    path = dir "/" file
    ln = 0
    while ((getline line < path) > 0) {
        ln++
        if (line !~ /^[ \t]*#[ \t]*include[ \t]*"/) continue
        inc = line
        sub(/^[ \t]*#[ \t]*include[ \t]*"/, "", inc)
        sub(/".*/, "", inc)
        to = inc; sub(/\.h$/, "", to)
        if (inc !~ /\.h$/ || inc ~ /\//) {
            printf "webhook/%s:%d: %s: not a webhook/ module header\n", file, ln, line
            bad = 1
            continue
        }
        if (!(to in layer)) {
            printf "webhook/%s:%d: %s: %s has no layer: add %s to the layer table in test/check-layers.sh and webhook/README.md\n", file, ln, line, to, to
            bad = 1
            continue
        }
        if (layer[to] + 0 <= layer[mod] + 0) continue
        if ((file " " inc) in exc) { used[file " " inc] = 1; continue }
        printf "webhook/%s:%d: %s: %s (layer %d, %s) may not include %s (layer %d, %s)\n", file, ln, line, mod, layer[mod], name[layer[mod]], to, layer[to], name[layer[to]]
        bad = 1
    }
    close(path)
}
END {
    for (m in seen) if (!seen[m]) {
        printf "check-layers: %s is in the layer table but webhook/ has no %s.c or %s.h: remove it from test/check-layers.sh and webhook/README.md\n", m, m, m
        bad = 1
    }
    for (e in used) if (!used[e]) {
        printf "check-layers: exception \"%s\" matches no include any more: remove it from test/check-layers.sh and webhook/README.md\n", e
        bad = 1
    }
    if (bad) exit 1
    nm = 0; for (m in seen) nm++
    printf "check-layers: %d modules, every include goes to its own layer or below\n", nm
}'
