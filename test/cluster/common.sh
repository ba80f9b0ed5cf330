# Helpers shared by up.sh and down.sh.  Sourced, not executed.
# shellcheck shell=sh

# Components in start order; down.sh stops them in reverse, so etcd goes
# last and the apiserver can finish its in-flight writes.
CLUSTER_COMPONENTS="etcd kube-apiserver kube-controller-manager training-operator jobset-controller trainer-controller-manager mpi-operator"

die() {
	echo "$(basename "$0"): $*" >&2
	exit 1
}

# abs_dir PATH [create]: print PATH as an absolute, symlink-free directory.
abs_dir() {
	if [ "${2:-}" = create ]; then
		mkdir -p "$1"
	fi
	[ -d "$1" ] || die "$1: not a directory"
	(cd "$1" && pwd -P)
}

# Paths end up unquoted in DIR/env (so that shells, Makefiles and test
# programs can all read it), and are matched as substrings of /proc cmdlines;
# keep them to characters that need no quoting anywhere.
check_path_chars() {
	case $1 in
	*[!A-Za-z0-9._/+-]*) die "$1: only A-Z a-z 0-9 . _ / + - allowed in this path" ;;
	esac
}

# pid_of DIR NAME: print the pid recorded for NAME, if its file is there.
pid_of() {
	[ -s "$1/pids/$2.pid" ] || return 1
	cat "$1/pids/$2.pid"
}

# is_ours DIR PID: true if PID is alive and is one of the processes started
# for DIR.  Every component gets some DIR/... path on its command line, so
# this also guards against a recycled pid, and it is false for a zombie
# (empty cmdline) so a killed-but-unreaped process counts as gone.
is_ours() {
	case $2 in '' | *[!0-9]*) return 1 ;; esac
	[ -r "/proc/$2/cmdline" ] || return 1
	tr '\0' '\n' <"/proc/$2/cmdline" 2>/dev/null | grep -qF -- "$1/"
}

# running_components DIR: print "name pid" for every live component.
running_components() {
	for _n in $CLUSTER_COMPONENTS; do
		_p=$(pid_of "$1" "$_n") || continue
		if is_ours "$1" "$_p"; then
			echo "$_n $_p"
		fi
	done
}

# now: seconds since the epoch (deadlines; POSIX sh has no $SECONDS).
now() {
	date +%s
}
