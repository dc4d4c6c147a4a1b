#!/bin/sh
# Writes kapi.1, the man page, from `KAPI --help` (the flag table: main/options.c) and
# `KAPI --version`: the help's groups become subsections, each flag a tagged paragraph.
set -e
kapi=$1
version=$("$kapi" --version | sed -n '1s/^kapi //p')
date=$(sed -n 's/^build date: \([0-9-]*\)T.*/\1/p' <<EOF2
$("$kapi" --version)
EOF2
)
cat <<EOF2
.TH KAPI 1 "$date" "kapi $version" "User Commands"
.SH NAME
kapi \- a Kubernetes API server on an embedded store
.SH SYNOPSIS
.B kapi
[\fIflags\fR]
EOF2
"$kapi" --help | awk '
function esc(s) { gsub(/\\/, "\\e", s); gsub(/-/, "\\-", s); sub(/^[.\047]/, "\\\\\\&&", s); return s }
BEGIN { section = "intro" }
section == "intro" && /^Usage:/ { section = "usage"; next }
section == "intro" && NF { if (!described) print ".SH DESCRIPTION"; described = 1; print esc($0); next }
/ flags:$/ { if (section != "flags") print ".SH OPTIONS"; section = "flags"; sub(/:$/, ""); print ".SS \"" $0 "\""; next }
section == "flags" && /^  +-/ {
    line = $0; sub(/^ +/, "", line)
    split(line, parts, /   +/)
    head = parts[1]; text = substr(line, length(head) + 1); sub(/^ +/, "", text)
    n = split(head, words, " ")
    flag = words[1]; for (i = 2; i < n; i++) flag = flag " " words[i]
    print ".TP"
    if (words[n] ~ /^-/) print "\\fB" esc(head) "\\fR"
    else print "\\fB" esc(flag) "\\fR \\fI" esc(words[n]) "\\fR"
    print esc(text)
}
'
cat <<'EOF2'
.SH SIGNALS
.TP
.B SIGTERM\fR, \fBSIGINT
Stop serving: requests in flight finish, watches end, then kapi exits.
.TP
.B SIGHUP
Read the serving certificate and key and the token file again: new connections get the
new certificate, open ones keep theirs; a file that cannot be read leaves the old one in
use and is logged.
.SH FILES
.TP
.I DATA/kapi.db
The SQLite store (with \fIkapi.db\-wal\fR and \fIkapi.db\-shm\fR while kapi runs).
.TP
.I DATA/kubeconfig
The admin's kubeconfig, written at start.
.TP
.I /etc/kapi/config.yaml
The settings of the packaged service (\fB\-\-config\fR).
.SH SEE ALSO
.BR kubectl (1),
.BR systemctl (1)
EOF2
