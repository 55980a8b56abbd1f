# tests/integration/cases.sh — the scenarios of the integration suite. Each
# case_* function runs one scenario under every runtime in RUNTIMES (ursa,
# then runc as the oracle when present), checks ursa's results against
# fixed expectations (and runc's too: a failing runc expectation means the
# expectation is wrong), then checks that ursa and runc agree. Sourced by run.

# ---- leftovers ------------------------------------------------------------------

# no_leftovers NAME RUNTIME ID [TOKEN]: after a container is gone, nothing
# of it remains: state dir, processes (pgrep of a token from its args),
# host mounts naming it, cgroups named after it.
no_leftovers()
{
	local name=$1 r=$2 id=$3 tok=${4:-$3} bad=()
	[ -e "$(rt_root "$r")/$id" ] && bad+=("state dir $(rt_root "$r")/$id still exists")
	if ! poll 5 no_process "$tok"; then
		bad+=("processes left: $(pgrep -a -f -- "$tok" | head -5)")
	fi
	local m
	m=$(grep -F -- "$id" /proc/self/mountinfo)
	[ -n "$m" ] && bad+=("host mounts left: $m")
	local cg
	cg=$(find /sys/fs/cgroup -maxdepth 6 -type d -name "*$id*" 2>/dev/null | head -5)
	[ -n "$cg" ] && bad+=("cgroups left: $cg")
	if [ ${#bad[@]} -eq 0 ]; then
		ok "$name/$r: nothing left behind (state dir, processes, mounts, cgroups)"
	else
		fail "$name/$r: nothing left behind (state dir, processes, mounts, cgroups)" "${bad[@]}"
	fi
}

# A long-lived container process whose args carry a unique token.
long_args()
{
	inside_args wait-file "/nonexistent-$1" 120
}

# ---- spec -----------------------------------------------------------------------

case_spec()
{
	local d=$WORK/spec-cmp
	mkdir -p "$d/ursa" "$d/runc"
	check "spec/ursa: ursa spec writes a valid config.json" \
		bash -c '"$1" spec --bundle "$2" && jq -e .ociVersion "$2/config.json"' _ "$URSA" "$d/ursa"
	[ -n "$RUNC" ] || return 0
	(cd "$d/runc" && "$RUNC" spec) >/dev/null 2>&1
	local diffout
	diffout=$(diff <(jq -S . "$d/ursa/config.json") <(jq -S . "$d/runc/config.json"))
	if [ -z "$diffout" ]; then
		ok "spec: ursa spec == runc spec"
	else
		fail "spec: ursa spec == runc spec" "$diffout"
	fi
}

# ---- lifecycle --------------------------------------------------------------------

# One container through created → running → paused → running → stopped →
# deleted; the transcript records what a shim would see.
lifecycle_one()
{
	local r=$1 T=$WORK/out/lifecycle.$r id tok st rc pid
	tok="$TOKEN-life-$r"
	id=$(new_id life)
	: >"$T"
	mkbundle "life.$r" '.process.args = $args' --argjson args "$(long_args "$tok")"
	rt "$r" create --bundle "$BUNDLE" "$id" </dev/null >"$T.create.out" 2>&1
	rc=$?
	echo "create.rc=$rc" >>"$T"
	check "lifecycle/$r: create exits 0" eq "create rc" "$rc" 0
	st=$(rt "$r" state "$id" 2>&1)
	echo "$st" >"$T.state-created"
	echo "state.created.status=$(jq -r .status <<<"$st")" >>"$T"
	check "lifecycle/$r: state after create is created" eq status "$(jq -r .status <<<"$st")" created
	check "lifecycle/$r: state has ociVersion, id, bundle" \
		jq -e --arg id "$id" --arg b "$BUNDLE" \
		'(.ociVersion | type == "string") and .id == $id and .bundle == $b' <<<"$st"
	pid=$(jq -r '.pid // 0' <<<"$st")
	check "lifecycle/$r: created init pid $pid is alive" pid_alive "$pid"
	# the positive control of no_leftovers' cgroup search
	check "lifecycle/$r: a cgroup named after the container exists" bash -c \
		'[ -n "$(find /sys/fs/cgroup -maxdepth 6 -type d -name "*$1*" 2>/dev/null)" ]' _ "$id"
	check "lifecycle/$r: created timestamp is RFC3339Nano" rfc3339nano "$(jq -r .created <<<"$st")"
	local list
	list=$(rt "$r" list --format json 2>&1)
	check "lifecycle/$r: list --format json shows it created" jq -e --arg id "$id" \
		'map(select(.id == $id))[0] | .status == "created" and (.pid > 0)' <<<"$list"
	echo "list.created=$(jq -c --arg id "$id" 'map(select(.id == $id)) | map({status}) ' <<<"$list")" >>"$T"

	rt "$r" start "$id" >"$T.start.out" 2>&1
	rc=$?
	echo "start.rc=$rc" >>"$T"
	check "lifecycle/$r: start exits 0" eq "start rc" "$rc" 0
	poll 10 status_is "$r" "$id" running
	echo "state.started.status=$(rt_status "$r" "$id")" >>"$T"
	check "lifecycle/$r: state after start is running" eq status "$(rt_status "$r" "$id")" running
	st=$(rt "$r" state "$id" 2>&1)
	check "lifecycle/$r: pid unchanged by start" eq pid "$(jq -r .pid <<<"$st")" "$pid"
	local ps
	ps=$(rt "$r" ps --format json "$id" 2>&1)
	echo "ps.has_init=$(jq --argjson p "$pid" 'index($p) != null' <<<"$ps" 2>&1)" >>"$T"
	check "lifecycle/$r: ps --format json lists the init pid" \
		jq -e --argjson p "$pid" 'type == "array" and index($p) != null' <<<"$ps"

	rt "$r" pause "$id" >"$T.pause.out" 2>&1
	echo "pause.rc=$?" >>"$T"
	poll 5 status_is "$r" "$id" paused
	echo "state.paused.status=$(rt_status "$r" "$id")" >>"$T"
	check "lifecycle/$r: state after pause is paused" eq status "$(rt_status "$r" "$id")" paused
	check "lifecycle/$r: paused init is frozen" bash -c \
		'poll() { for _ in $(seq 100); do grep -Eq "^State:.*(D|S|T)" /proc/$1/status && return 0; sleep 0.02; done; return 1; }; poll "$1"' _ "$pid"
	rt "$r" resume "$id" >"$T.resume.out" 2>&1
	echo "resume.rc=$?" >>"$T"
	poll 5 status_is "$r" "$id" running
	echo "state.resumed.status=$(rt_status "$r" "$id")" >>"$T"
	check "lifecycle/$r: state after resume is running" eq status "$(rt_status "$r" "$id")" running

	rt "$r" kill "$id" KILL >"$T.kill.out" 2>&1
	echo "kill.rc=$?" >>"$T"
	poll 10 status_is "$r" "$id" stopped
	echo "state.killed.status=$(rt_status "$r" "$id")" >>"$T"
	check "lifecycle/$r: state after kill KILL is stopped" eq status "$(rt_status "$r" "$id")" stopped
	check "lifecycle/$r: init is gone after kill" poll 5 pid_gone "$pid"
	local out
	out=$(rt "$r" kill "$id" KILL 2>&1)
	rc=$?
	echo "kill.stopped.rc=$([ "$rc" = 0 ] && echo 0 || echo nonzero)" >>"$T"
	check "lifecycle/$r: kill on a stopped container fails" nonzero "kill rc" "$rc"
	check "lifecycle/$r: ... saying \"container not running\"" match "kill stderr" "$out" "container not running"

	rt "$r" delete "$id" >"$T.delete.out" 2>&1
	rc=$?
	echo "delete.rc=$rc" >>"$T"
	check "lifecycle/$r: delete of a stopped container exits 0" eq "delete rc" "$rc" 0
	out=$(rt "$r" state "$id" 2>&1)
	rc=$?
	echo "state.deleted.rc=$([ "$rc" = 0 ] && echo 0 || echo nonzero)" >>"$T"
	check "lifecycle/$r: state after delete fails with \"does not exist\"" \
		bash -c '[ "$1" != 0 ] && [[ $2 == *"does not exist"* ]] || { echo "rc=$1 out=$2"; exit 1; }' _ "$rc" "$out"
	no_leftovers lifecycle "$r" "$id" "$tok"
}

case_lifecycle()
{
	local r
	for r in "${RUNTIMES[@]}"; do
		lifecycle_one "$r"
	done
	same lifecycle '.*'
}

# delete without --force on a running container, delete --force, missing ids.
case_delete()
{
	local r id tok out rc T pid
	for r in "${RUNTIMES[@]}"; do
		T=$WORK/out/delete.$r
		: >"$T"
		tok="$TOKEN-del-$r"
		id=$(new_id del)
		mkbundle "del.$r" '.process.args = $args' --argjson args "$(long_args "$tok")"
		rt "$r" create --bundle "$BUNDLE" "$id" </dev/null >/dev/null 2>&1
		rt "$r" start "$id" >/dev/null 2>&1
		poll 10 status_is "$r" "$id" running
		pid=$(rt "$r" state "$id" | jq -r .pid)
		out=$(rt "$r" delete "$id" 2>&1)
		rc=$?
		echo "delete.running.rc=$([ "$rc" = 0 ] && echo 0 || echo nonzero)" >>"$T"
		check "delete/$r: delete of a running container without --force fails" \
			nonzero "delete rc" "$rc"
		echo "delete.running.status=$(rt_status "$r" "$id")" >>"$T"
		check "delete/$r: ... and leaves it running" eq status "$(rt_status "$r" "$id")" running
		rt "$r" delete --force "$id" >/dev/null 2>&1
		rc=$?
		echo "delete.force.rc=$rc" >>"$T"
		check "delete/$r: delete --force of a running container exits 0" eq "rc" "$rc" 0
		check "delete/$r: ... and its init is gone" poll 10 pid_gone "$pid"
		echo "delete.force.status=$(rt_status "$r" "$id")" >>"$T"
		no_leftovers delete "$r" "$id" "$tok"

		rt "$r" delete --force "$TOKEN-missing" >/dev/null 2>&1
		rc=$?
		echo "delete.force.missing.rc=$rc" >>"$T"
		check "delete/$r: delete --force of a missing id exits 0" eq rc "$rc" 0
		out=$(rt "$r" delete "$TOKEN-missing" 2>&1)
		rc=$?
		echo "delete.missing.rc=$([ "$rc" = 0 ] && echo 0 || echo nonzero)" >>"$T"
		check "delete/$r: delete of a missing id fails with \"does not exist\"" \
			bash -c '[ "$1" != 0 ] && [[ $2 == *"does not exist"* ]] || { echo "rc=$1 out=$2"; exit 1; }' _ "$rc" "$out"
		for cmd in state kill start pause; do
			out=$(rt "$r" $cmd "$TOKEN-missing" 2>&1)
			rc=$?
			echo "$cmd.missing.rc=$([ "$rc" = 0 ] && echo 0 || echo nonzero)" >>"$T"
			check "delete/$r: $cmd of a missing id fails with \"does not exist\"" \
				bash -c '[ "$1" != 0 ] && [[ $2 == *"does not exist"* ]] || { echo "rc=$1 out=$2"; exit 1; }' _ "$rc" "$out"
		done
	done
	same delete '.*'
}

# kill in state "created" must work (the shim relies on it).
case_kill_created()
{
	local r id tok rc T pid
	for r in "${RUNTIMES[@]}"; do
		T=$WORK/out/killcreated.$r
		: >"$T"
		tok="$TOKEN-kc-$r"
		id=$(new_id kc)
		mkbundle "kc.$r" '.process.args = $args' --argjson args "$(long_args "$tok")"
		rt "$r" create --bundle "$BUNDLE" "$id" </dev/null >/dev/null 2>&1
		pid=$(rt "$r" state "$id" | jq -r .pid)
		rt "$r" kill "$id" KILL >"$T.kill.out" 2>&1
		rc=$?
		echo "kill.created.rc=$rc" >>"$T"
		check "killcreated/$r: kill KILL in state created exits 0" eq rc "$rc" 0
		poll 10 status_is "$r" "$id" stopped
		echo "status=$(rt_status "$r" "$id")" >>"$T"
		check "killcreated/$r: ... and the container becomes stopped" eq status "$(rt_status "$r" "$id")" stopped
		check "killcreated/$r: ... and its init is gone" poll 10 pid_gone "$pid"
		rt "$r" delete "$id" >/dev/null 2>&1
		echo "delete.rc=$?" >>"$T"
		no_leftovers killcreated "$r" "$id" "$tok"
	done
	same killcreated '.*'
}

# ---- exit codes -----------------------------------------------------------------

# exit_by_signal RUNTIME NAME FILTER SIGNAL ARGS...: `run` ARGS in the
# background, wait until it says waiting=, `kill` it with SIGNAL, return
# run's exit status.
exit_by_signal()
{
	local r=$1 name=$2 filter=$3 sig=$4
	shift 4
	local args id out pid rc
	args=$(inside_args "$@")
	mkbundle "$name.$r" "$filter | .process.args = \$args" --argjson args "$args"
	id=$(new_id "$name")
	out=$WORK/out/$name.$r.run
	run_fg "$r" "$BUNDLE" "$id" "$out" &
	pid=$!
	if ! poll 10 grep -q '^waiting=' "$out"; then
		echo "never started: $(cat "$out.err")" >&2
	fi
	rt "$r" kill "$id" "$sig" >/dev/null 2>&1
	wait "$pid"
	rc=$?
	return "$rc"
}

case_exit_codes()
{
	local r T rc
	for r in "${RUNTIMES[@]}"; do
		T=$WORK/out/exit.$r
		: >"$T"
		inside "$r" exit0 '.' exit 0
		rc=$?
		echo "exit.0=$rc" >>"$T"
		check "exit/$r: run exits 0 when the process does" eq rc "$rc" 0
		inside "$r" exit7 '.' hostname + exit 7
		rc=$?
		echo "exit.7=$rc" >>"$T"
		check "exit/$r: run exits 7 when the process does" eq rc "$rc" 7
		check "exit/$r: ... and its output came through" grep -q '^hostname=' "$OUT"
		exit_by_signal "$r" exitkill '.' KILL trap
		rc=$?
		echo "exit.kill=$rc" >>"$T"
		check "exit/$r: run exits 137 after kill ID KILL" eq rc "$rc" 137
		# without a pid namespace the init is not pid 1: SIGTERM's default action kills it
		exit_by_signal "$r" exitterm '.linux.namespaces |= map(select(.type != "pid"))' TERM signal-exit
		rc=$?
		echo "exit.term.nopidns=$rc" >>"$T"
		check "exit/$r: run exits 143 after kill ID TERM (init killed by SIGTERM)" eq rc "$rc" 143
		exit_by_signal "$r" exittrap '.' TERM trap
		rc=$?
		echo "exit.term.trap=$rc" >>"$T"
		check "exit/$r: run exits 143 when the init catches TERM and exits 143" eq rc "$rc" 143
	done
	same exit '.*'
}

# ---- inside: defaults -----------------------------------------------------------

case_default()
{
	local r o
	for r in "${RUNTIMES[@]}"; do
		inside "$r" default '.' caps + rlimits + mounts + fds + hostname + ids + env + cwd + \
			umask + nnp + oom + seccomp + pid + exe + write /rootfile /tmp/f /dev/shm/f
		o=$OUT
		check "default/$r: run exits 0" eq rc "$(cat "$o.rc")" 0
		expect_val "default/$r: no leaked fds (only 0, 1, 2)" "$o" fds 0,1,2
		expect_val "default/$r: hostname from config" "$o" hostname runc
		expect_val "default/$r: pid 1 in its pid namespace" "$o" pid 1
		expect_val "default/$r: uid 0" "$o" uid 0
		expect_val "default/$r: cwd /" "$o" cwd /
		expect_val "default/$r: umask 0022" "$o" umask 0022
		expect_val "default/$r: NoNewPrivs 1" "$o" NoNewPrivs 1
		expect_val "default/$r: RLIMIT_NOFILE 1024:1024" "$o" RLIMIT_NOFILE 1024:1024
		expect_val "default/$r: read-only root: write / fails EROFS" "$o" write./rootfile EROFS
		expect_val "default/$r: /dev/shm is writable" "$o" write./dev/shm/f ok
		expect_val "default/$r: CapBnd = the spec's 3 caps" "$o" CapBnd 0000000020000420
		check "default/$r: env has PATH and TERM from config" bash -c \
			'grep -qx "env=PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" "$1" && grep -qx "env=TERM=xterm" "$1"' _ "$o"
		check "default/$r: every process inside runs the rootfs binary (CVE-2019-5736)" \
			bash -c 'v=$(grep "^exe\.[0-9]*=" "$1"); [ -n "$v" ] && ! grep -v "=/bin/ursa-inside$" <<<"$v"' _ "$o"
		check "default/$r: /proc/self/exe and /proc/1/exe cannot be opened for writing" bash -c \
			'! grep -E "^exe\.(write|rdwr|reopen)\.[a-z]+=ok$" "$1" && grep -q "^exe.write.init=" "$1"' _ "$o"
	done
	same default 'Cap[A-Za-z]+'
	same default 'RLIMIT_[A-Z]+'
	# a masked directory is an empty read-only tmpfs; "size=0" (unlimited) is the same thing
	same default 'mount' 'grep -v ^mount=/sys/fs/cgroup' 'sed s/,size=0k//'
	for r in "${RUNTIMES[@]}"; do
		check "default/$r: /sys/fs/cgroup shows the container's cgroup v1 hierarchies" \
			grep -qE '^mount=/sys/fs/cgroup/(memory|pids) cgroup ' "$WORK/out/default.$r"
	done
	same default 'fds'
	same default 'hostname|domainname'
	same default 'uid|euid|gid|egid|groups|uid_map|gid_map|setgroups'
	same default 'env' 'grep -v ^env=HOME='
	check "default/ursa: HOME is set from /etc/passwd when process.env has none (like runc)" \
		grep -qx 'env=HOME=/root' "$WORK/out/default.ursa"
	same default 'cwd|umask|NoNewPrivs|oom_score_adj'
	same default 'Seccomp|Seccomp_filters'
	same default 'exe\.(write|rdwr|reopen)\.[a-z]+'
	same default 'write\.[^=]*'
	same default 'pid'
}

# ---- inside: process settings -------------------------------------------------------

case_process()
{
	local r o f
	f='.hostname = "uit-host"
	 | .process.env = ["A=1", "PATH=/bin:/sbin", "B=two words", "EMPTY="]
	 | .process.cwd = "/home/user"
	 | .process.user = {uid: 1000, gid: 1000, additionalGids: [10, 20], umask: 63}
	 | .process.oomScoreAdj = 123
	 | .process.noNewPrivileges = false
	 | .process.rlimits = [{type: "RLIMIT_NOFILE", soft: 100, hard: 200},
	                       {type: "RLIMIT_NPROC", soft: 500, hard: 600},
	                       {type: "RLIMIT_CORE", soft: 0, hard: 0},
	                       {type: "RLIMIT_MSGQUEUE", soft: 4096, hard: 8192}]'
	for r in "${RUNTIMES[@]}"; do
		inside "$r" process "$f" ids + env + cwd + umask + oom + nnp + rlimits + hostname + caps + fds
		o=$OUT
		check "process/$r: run exits 0" eq rc "$(cat "$o.rc")" 0
		expect_val "process/$r: hostname" "$o" hostname uit-host
		expect_val "process/$r: uid 1000" "$o" uid 1000
		expect_val "process/$r: gid 1000" "$o" gid 1000
		expect_val "process/$r: additionalGids" "$o" groups 10,20
		expect_val "process/$r: cwd" "$o" cwd /home/user
		expect_val "process/$r: umask 0077" "$o" umask 0077
		expect_val "process/$r: oomScoreAdj 123" "$o" oom_score_adj 123
		expect_val "process/$r: noNewPrivileges false" "$o" NoNewPrivs 0
		expect_val "process/$r: RLIMIT_NOFILE 100:200" "$o" RLIMIT_NOFILE 100:200
		expect_val "process/$r: RLIMIT_NPROC 500:600" "$o" RLIMIT_NPROC 500:600
		expect_val "process/$r: RLIMIT_CORE 0:0" "$o" RLIMIT_CORE 0:0
		expect_val "process/$r: RLIMIT_MSGQUEUE 4096:8192" "$o" RLIMIT_MSGQUEUE 4096:8192
		check "process/$r: env is the config's (HOME aside)" diff <(keys "$o" env | grep -v ^env=HOME=) \
			<(printf 'env=%s\n' "A=1" "B=two words" "EMPTY=" "PATH=/bin:/sbin" | LC_ALL=C sort)
		expect_val "process/$r: non-root user gets no effective caps" "$o" CapEff 0000000000000000
		expect_val "process/$r: no leaked fds" "$o" fds 0,1,2
	done
	same process 'uid|euid|gid|egid|groups|env|cwd|umask|oom_score_adj|NoNewPrivs|RLIMIT_[A-Z]+|hostname|domainname|Cap[A-Za-z]+|fds' \
		'grep -v ^env=HOME='
	check "process/ursa: HOME is set from /etc/passwd when process.env has none (like runc)" \
		grep -qx 'env=HOME=/home/user' "$WORK/out/process.ursa"
}

# Reduced capability sets, ambient included.
case_caps()
{
	local r o f
	f='.process.capabilities = {
		bounding: ["CAP_CHOWN", "CAP_KILL", "CAP_NET_BIND_SERVICE"],
		effective: ["CAP_CHOWN", "CAP_KILL"],
		permitted: ["CAP_CHOWN", "CAP_KILL", "CAP_NET_BIND_SERVICE"],
		inheritable: ["CAP_CHOWN", "CAP_NET_BIND_SERVICE"],
		ambient: ["CAP_NET_BIND_SERVICE"]}'
	for r in "${RUNTIMES[@]}"; do
		inside "$r" caps "$f" caps
		o=$OUT
		check "caps/$r: run exits 0" eq rc "$(cat "$o.rc")" 0
		expect_val "caps/$r: bounding" "$o" CapBnd 0000000000000421
		expect_val "caps/$r: permitted" "$o" CapPrm 0000000000000421
		expect_val "caps/$r: inheritable" "$o" CapInh 0000000000000401
		expect_val "caps/$r: ambient" "$o" CapAmb 0000000000000400
		# execve as root recomputes effective = permitted (runc behaves the same)
		expect_val "caps/$r: effective" "$o" CapEff 0000000000000421
	done
	same caps '.*'
	# uid 1000 with ambient: the cap survives execve as non-root
	f="$f"' | .process.user = {uid: 1000, gid: 1000}'
	for r in "${RUNTIMES[@]}"; do
		inside "$r" capsuser "$f" caps + ids
		expect_val "capsuser/$r: ambient cap kept for uid 1000" "$OUT" CapAmb 0000000000000400
		expect_val "capsuser/$r: ... and effective" "$OUT" CapEff 0000000000000400
	done
	same capsuser '.*'
}

# ---- inside: mounts ----------------------------------------------------------------------

case_mounts()
{
	local r o f
	mkdir -p "$WORK/vol-ro" "$WORK/vol-rw"
	echo hello >"$WORK/vol-ro/hello"
	f='.mounts += [
		{destination: "/data/ro", type: "bind", source: ($work + "/vol-ro"), options: ["rbind", "ro"]},
		{destination: "/data/rw", type: "bind", source: ($work + "/vol-rw"), options: ["rbind", "rw"]},
		{destination: "/scratch", type: "tmpfs", source: "tmpfs", options: ["nosuid", "nodev", "noexec", "size=1m", "mode=1770"]}]'
	for r in "${RUNTIMES[@]}"; do
		rm -f "$WORK/vol-rw/from-$r"
		inside "$r" mounts "$f" write /data/ro/x "/data/rw/from-$r" /scratch/x + read /data/ro/hello + \
			stat /scratch /data/ro /data/rw + mounts
		o=$OUT
		check "mounts/$r: run exits 0" eq rc "$(cat "$o.rc")" 0
		expect_val "mounts/$r: ro bind: write fails EROFS" "$o" write./data/ro/x EROFS
		expect_val "mounts/$r: ro bind: readable" "$o" read./data/ro/hello.head 'hello\n'
		expect_val "mounts/$r: rw bind: write ok" "$o" "write./data/rw/from-$r" ok
		check "mounts/$r: rw bind: the file is on the host" test -f "$WORK/vol-rw/from-$r"
		expect_val "mounts/$r: tmpfs: writable" "$o" write./scratch/x ok
		if [ "$r" = runc ]; then
			skip "mounts/runc: tmpfs: mode=1770" "runc 1.1.5 chmods a tmpfs to its mount point's mode"
		else
			expect_val "mounts/$r: tmpfs: mode=1770" "$o" stat./scratch 'dir 1770 0 0'
		fi
		check "mounts/$r: tmpfs: nosuid,nodev,noexec,size=1024k" bash -c \
			'grep -E "^mount=/scratch tmpfs " "$1" | grep -E "(^|,)nosuid(,| )" | grep -E "(^|,)nodev(,| )" | grep -E "(^|,)noexec(,| )" | grep -q "size=1024k"' _ "$o"
		check "mounts/$r: ro bind is ro in mountinfo" bash -c \
			'grep -E "^mount=/data/ro " "$1" | grep -qE " (ro|ro,[^ ]*)|,ro(,| )"' _ "$o"
	done
	same mounts 'write[^=]*|read[^=]*|stat[^=]*' 'grep -v ^stat./scratch=' 'sed s/from-runc/from-ursa/'
	same mounts 'mount' 'grep -E "^mount=/(data|scratch)"'
}

# Masked and read-only paths: the defaults from `spec`, plus our own.
case_masked()
{
	local r o f
	f='.linux.maskedPaths += ["/etc/group", "/data"] | .linux.readonlyPaths += ["/home"]'
	for r in "${RUNTIMES[@]}"; do
		inside "$r" masked "$f" read /proc/keys /proc/timer_list /etc/group + \
			stat /proc/keys /sys/firmware /data + mounts + write \
			/proc/sys/kernel/domainname /home/user/x /data/x /etc/group
		o=$OUT
		check "masked/$r: run exits 0" eq rc "$(cat "$o.rc")" 0
		expect_val "masked/$r: /proc/keys is /dev/null" "$o" stat./proc/keys 'chr 0666 0 0 dev=1:3'
		expect_val "masked/$r: /proc/timer_list reads empty" "$o" read./proc/timer_list.len 0
		expect_val "masked/$r: /proc/keys reads empty" "$o" read./proc/keys.len 0
		expect_val "masked/$r: a masked file (/etc/group) reads empty" "$o" read./etc/group.len 0
		expect_val "masked/$r: a masked dir (/data) is an empty read-only tmpfs" "$o" write./data/x EROFS
		check "masked/$r: /proc/bus is a read-only mount" grep -qE '^mount=/proc/bus proc ([^ ]*,)?ro[, ]' "$o"
		expect_val "masked/$r: /proc/sys is read-only" "$o" write./proc/sys/kernel/domainname EROFS
		expect_val "masked/$r: a readonlyPaths entry (/home) is read-only" "$o" write./home/user/x EROFS
	done
	same masked 'read[^=]*|write[^=]*|stat[^=]*'
	same masked 'mount' 'grep -E "^mount=/(proc|sys|data|home|etc)/" | grep -v ^mount=/sys/fs/cgroup' 'sed s/,size=0k//'
}

# Mount propagation: an rslave bind of a shared host mount sees a mount
# made on the host after the container started.
case_propagation()
{
	local r o f id pid src=$WORK/prop
	mkdir -p "$src"
	if ! mount -t tmpfs -o size=1m uit-prop "$src" || ! mount --make-shared "$src"; then
		skip_dep "propagation: set up a shared host mount" "mount failed"
		return
	fi
	f='.mounts += [{destination: "/data/prop", type: "bind", source: ($work + "/prop"), options: ["rbind", "rslave"]}]'
	for r in "${RUNTIMES[@]}"; do
		mkdir -p "$src/$r"
		inside "$r" propagation "$f" wait-file "/data/prop/$r/sub/flag" 15 + mounts &
		pid=$!
		# the container runs once its wait-file process exists
		poll 10 pgrep -f "wait-file /data/prop/$r/sub/flag"
		mkdir -p "$src/$r/sub"
		mount -t tmpfs -o size=1m "uit-prop-$r" "$src/$r/sub"
		touch "$src/$r/sub/flag"
		wait "$pid"
		o=$WORK/out/propagation.$r
		expect_val "propagation/$r: a host mount made after start shows up in an rslave bind" \
			"$o" "wait./data/prop/$r/sub/flag" ok
		check "propagation/$r: the bind is a slave (master:N in mountinfo)" \
			grep -qE "^mount=/data/prop tmpfs .* master$" "$o"
		umount "$src/$r/sub" 2>/dev/null
	done
	umount -l "$src" 2>/dev/null
	same propagation 'wait[^=]*' 'sed s/runc/ursa/'
	same propagation 'mount' 'grep -E "^mount=/data/prop"' 'sed s/runc/ursa/'
}

# ---- inside: seccomp ---------------------------------------------------------------------

case_seccomp()
{
	local r o f
	f='.linux.seccomp = {defaultAction: "SCMP_ACT_ALLOW",
		architectures: ["SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "SCMP_ARCH_X32"],
		syscalls: [
			{names: ["personality"], action: "SCMP_ACT_ERRNO", errnoRet: 95},
			{names: ["mkdir", "mkdirat"], action: "SCMP_ACT_ERRNO"},
			{names: ["chroot"], action: "SCMP_ACT_ERRNO", errnoRet: 13},
			{names: ["sethostname"], action: "SCMP_ACT_ERRNO", errnoRet: 1,
			 args: [{index: 1, value: 1, op: "SCMP_CMP_EQ"}]}]}'
	for r in "${RUNTIMES[@]}"; do
		inside "$r" seccomp "$f" seccomp personality mkdir mkdirat chroot getppid uname sethostname
		o=$OUT
		check "seccomp/$r: run exits 0" eq rc "$(cat "$o.rc")" 0
		expect_val "seccomp/$r: filter mode 2" "$o" Seccomp 2
		expect_val "seccomp/$r: ERRNO errnoRet 95 → EOPNOTSUPP" "$o" syscall.personality EOPNOTSUPP
		expect_val "seccomp/$r: ERRNO without errnoRet → EPERM (mkdir)" "$o" syscall.mkdir EPERM
		expect_val "seccomp/$r: ERRNO without errnoRet → EPERM (mkdirat)" "$o" syscall.mkdirat EPERM
		expect_val "seccomp/$r: ERRNO errnoRet 13 → EACCES" "$o" syscall.chroot EACCES
		expect_val "seccomp/$r: an arg-matched rule applies" "$o" syscall.sethostname EPERM
		expect_val "seccomp/$r: unfiltered syscalls work (getppid)" "$o" syscall.getppid ok
		expect_val "seccomp/$r: unfiltered syscalls work (uname)" "$o" syscall.uname ok
	done
	same seccomp 'Seccomp|syscall\.[a-z]+'
}

# ---- inside: namespaces ----------------------------------------------------------------

case_userns()
{
	local r o f id tok pid uid gid T
	f='.linux.namespaces += [{type: "user"}]
	 | .linux.uidMappings = [{containerID: 0, hostID: 100000, size: 65536}]
	 | .linux.gidMappings = [{containerID: 0, hostID: 200000, size: 65536}]'
	for r in "${RUNTIMES[@]}"; do
		tok="$TOKEN-userns-$r"
		id=$(new_id userns)
		mkbundle "userns.$r" "$f | .process.args = \$args" \
			--argjson args "$(inside_args ids + caps + wait-file "/nonexistent-$tok" 120)"
		o=$WORK/out/userns.$r
		rt "$r" create --bundle "$BUNDLE" "$id" </dev/null >"$o" 2>"$o.err"
		check "userns/$r: create exits 0" eq rc "$?" 0
		rt "$r" start "$id" >/dev/null 2>>"$o.err"
		poll 10 grep -q '^CapAmb=' "$o"
		pid=$(rt "$r" state "$id" 2>/dev/null | jq -r '.pid // 0')
		uid=$(awk '/^Uid:/{print $2}' "/proc/$pid/status" 2>/dev/null)
		gid=$(awk '/^Gid:/{print $2}' "/proc/$pid/status" 2>/dev/null)
		echo "host.uid=$uid" >>"$o"
		echo "host.gid=$gid" >>"$o"
		expect_val "userns/$r: uid 0 inside" "$o" uid 0
		expect_val "userns/$r: uid_map inside" "$o" uid_map '0 100000 65536'
		expect_val "userns/$r: gid_map inside" "$o" gid_map '0 200000 65536'
		check "userns/$r: the host sees uid 100000" eq "host uid" "$uid" 100000
		check "userns/$r: the host sees gid 200000" eq "host gid" "$gid" 200000
		rt "$r" delete --force "$id" >/dev/null 2>&1
		no_leftovers userns "$r" "$id" "$tok"
	done
	same userns '.*'
}

case_sysctl()
{
	local r o f before
	before=$(cat /proc/sys/net/ipv4/ip_forward)
	local want=1
	[ "$before" = 1 ] && want=0
	f='.linux.sysctl = {"net.ipv4.ip_forward": "'"$want"'", "kernel.domainname": "uit.example"}'
	for r in "${RUNTIMES[@]}"; do
		inside "$r" sysctl "$f" sysctl net.ipv4.ip_forward kernel.domainname + hostname
		o=$OUT
		check "sysctl/$r: run exits 0" eq rc "$(cat "$o.rc")" 0
		expect_val "sysctl/$r: net.ipv4.ip_forward set in the new netns" "$o" sysctl.net.ipv4.ip_forward "$want"
		expect_val "sysctl/$r: kernel.domainname set in the new uts ns" "$o" domainname uit.example
		check "sysctl/$r: the host's ip_forward is untouched" eq ip_forward \
			"$(cat /proc/sys/net/ipv4/ip_forward)" "$before"
	done
	same sysctl '.*'
}

# ---- fds ------------------------------------------------------------------------------

# The runner itself holds fds 7 and 9 open (see run): they must not reach the
# container. --preserve-fds 1 passes fd 3 on, and nothing else.
case_fds()
{
	local r o id args
	args=$(inside_args fds + read /proc/self/fd/3)
	for r in "${RUNTIMES[@]}"; do
		mkbundle "fds.$r" '.process.args = $args' --argjson args "$args"
		id=$(new_id fds)
		o=$WORK/out/fds.$r
		rt_argv "$r"
		timeout -k 5 30 "${RT_ARGV[@]}" run --preserve-fds 1 --bundle "$BUNDLE" "$id" \
			</dev/null >"$o" 2>"$o.err" 3<"$WORK/fd3-file"
		echo "rc=$?" >>"$o"
		expect_val "fds/$r: run --preserve-fds 1 exits 0" "$o" rc 0
		expect_val "fds/$r: --preserve-fds 1 passes fd 3 and nothing else" "$o" fds 0,1,2,3
		expect_val "fds/$r: fd 3 is the file we passed" "$o" read./proc/self/fd/3.head 'fd3\n'
	done
	same fds 'fds|read[^=]*|rc'
}

# ---- ursa do --------------------------------------------------------------------------

case_do()
{
	local o=$WORK/out/do rc hostdir=/var/tmp/$TOKEN
	local before_scratch
	before_scratch=$(ls /run/ursa/.do 2>/dev/null | sort)
	mkdir -p "$hostdir" "$WORK/do-vol-rw" "$WORK/do-vol-ro"
	echo host >"$WORK/do-vol-ro/f"
	echo "$TOKEN" >"/tmp/$TOKEN-host-tmp"
	# /tmp is private inside: run a copy of the probe from outside /tmp
	local probe=$hostdir/ursa-inside
	cp "$INSIDE" "$probe"
	timeout -k 5 30 "$URSA" do --cwd "$hostdir" -e "UIT_FOO=bar baz" \
		-v "$WORK/do-vol-rw:/mnt/rw" -v "$WORK/do-vol-ro:/mnt/ro:ro" -- \
		"$probe" write "$hostdir/new" "/etc/$TOKEN" /tmp/inside-tmp /mnt/rw/new /mnt/ro/new + \
		stat "/tmp/$TOKEN-host-tmp" /tmp + read /mnt/ro/f + env + cwd + hostname + fds + \
		ids + caps + nnp + seccomp unshare + exit 7 </dev/null >"$o" 2>"$o.err"
	rc=$?
	check "do/ursa: exit status of the command is propagated (7)" eq rc "$rc" 7
	expect_val "do/ursa: the host root is writable through the overlay" "$o" "write.$hostdir/new" ok
	check "do/ursa: ... but the file does not appear on the host" test ! -e "$hostdir/new"
	expect_val "do/ursa: /etc is writable through the overlay" "$o" "write./etc/$TOKEN" ok
	check "do/ursa: ... but /etc/$TOKEN does not appear on the host" test ! -e "/etc/$TOKEN"
	expect_val "do/ursa: /tmp is private (host file not visible)" "$o" "stat./tmp/$TOKEN-host-tmp" ENOENT
	expect_val "do/ursa: /tmp is writable" "$o" write./tmp/inside-tmp ok
	check "do/ursa: ... and /tmp/inside-tmp does not reach the host" test ! -e /tmp/inside-tmp
	expect_val "do/ursa: --volume rw is writable" "$o" write./mnt/rw/new ok
	check "do/ursa: ... and the file is on the host" test -f "$WORK/do-vol-rw/new"
	expect_val "do/ursa: --volume :ro is read-only" "$o" write./mnt/ro/new EROFS
	expect_val "do/ursa: --volume :ro is readable" "$o" read./mnt/ro/f.head 'host\n'
	check "do/ursa: --env reaches the command" grep -qx 'env=UIT_FOO=bar baz' "$o"
	expect_val "do/ursa: --cwd is the working directory" "$o" cwd "$hostdir"
	expect_val "do/ursa: no leaked fds" "$o" fds 0,1,2
	expect_val "do/ursa: NoNewPrivs" "$o" NoNewPrivs 1
	expect_val "do/ursa: seccomp filter on" "$o" Seccomp 2
	expect_val "do/ursa: Docker's default caps without CAP_MKNOD" "$o" CapBnd 00000000a00425fb
	expect_val "do/ursa: default seccomp profile denies unshare" "$o" syscall.unshare EPERM
	timeout -k 5 30 "$URSA" do -- /bin/sh -c 'exit 0' </dev/null >/dev/null 2>&1
	check "do/ursa: exit status 0 is propagated" eq rc "$?" 0
	timeout -k 5 30 "$URSA" do --cwd relative -- /bin/true </dev/null >/dev/null 2>"$o.relcwd"
	rc=$?
	check "do/ursa: --cwd relative is refused" bash -c '[ "$1" != 0 ] && grep -q cwd "$2"' _ "$rc" "$o.relcwd"
	# nothing left: scratch entries, mounts, processes
	check "do/ursa: no scratch dir left in /run/ursa/.do" eq scratch \
		"$(ls /run/ursa/.do 2>/dev/null | sort)" "$before_scratch"
	check "do/ursa: no overlay or scratch mounts left on the host" bash -c \
		'! grep -E "/run/ursa/\.do/" /proc/self/mountinfo' _
	check "do/ursa: no process left" poll 5 no_process "write $hostdir/new"
	rm -f "/tmp/$TOKEN-host-tmp"
}

# ---- ursa do: signals and exit statuses (the host is the oracle) ---------------------
# The command is not pid 1 (which ignores signals it has no handler for): a
# minimal init forwards signals to it and exits with its status
# (host/init.c), so `ursa do CMD` ends as CMD run on the host does.

DO_SEQ=0
# do_dur: a unique sleep duration, so `pgrep -f "^sleep $dur$"` finds the one
# sleep process (not the `ursa do sleep ...` command lines around it).
do_dur()
{
	# called in $(...): a counter would not survive the subshell
	echo "1000.$$$SRANDOM"
}

# do_sig_status SIGNAL DUR CMD...: start CMD in the background with SIGINT
# and SIGQUIT at their defaults (as a job of an interactive shell, not
# ignored as in a script's background job), wait until its `sleep DUR` runs,
# send SIGNAL to CMD's own pid (ursa do, or the host command), wait for it to
# end (at most 20 s: "timeout", then it is killed) and print its status.
do_sig_status()
{
	local sig=$1 dur=$2 pid rc
	shift 2
	env --default-signal=INT,QUIT,HUP "$@" </dev/null >/dev/null 2>&1 &
	pid=$!
	if ! poll 15 pgrep -f "^sleep $dur\$"; then
		kill -9 "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
		echo "never started"
		return
	fi
	kill -"$sig" "$pid"
	if ! poll 20 pid_gone "$pid"; then
		kill -9 "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
		echo timeout
		return
	fi
	wait "$pid"
	rc=$?
	pkill -KILL -f "^sleep $dur\$" 2>/dev/null # the host's orphans (a trap case)
	echo "$rc"
}

# do_vs_host NAME SIGNAL WANT SH-SCRIPT: SH-SCRIPT (running `sleep DUR`, DUR
# substituted) under `ursa do` and on the host, each sent SIGNAL: both end
# with status WANT, and nothing of the sandbox is left.
do_vs_host()
{
	local name=$1 sig=$2 want=$3 script=$4 dur host got
	dur=$(do_dur)
	host=$(do_sig_status "$sig" "$dur" sh -c "${script//DUR/$dur}")
	dur=$(do_dur)
	got=$(do_sig_status "$sig" "$dur" "$URSA" do -- sh -c "${script//DUR/$dur}")
	check "do_signals/host: $name, SIG$sig: status $want" eq status "$host" "$want"
	check "do_signals/ursa: $name, SIG$sig to ursa do: status $want" eq status "$got" "$want"
	check "do_signals/ursa: $name, SIG$sig: no process left" poll 5 no_process "^sleep $dur\$"
}

case_do_signals()
{
	local o=$WORK/out/do_signals sig n dur rc pid init
	if ! env --default-signal=INT true 2>/dev/null; then
		skip_dep "do_signals/ursa: signal cases" "env --default-signal missing (coreutils < 8.31)"
		return
	fi
	for sig in TERM INT HUP; do
		case $sig in TERM) n=15 ;; INT) n=2 ;; HUP) n=1 ;; esac
		do_vs_host "sleep" "$sig" $((128 + n)) 'exec sleep DUR'
	done
	do_vs_host "sh waiting for a child" TERM 143 'sleep DUR; echo not reached'
	do_vs_host "sh trapping TERM (the command alone gets it)" TERM 7 \
		'trap "exit 7" TERM; sleep DUR & wait'
	for n in 'kill -9 $$:137' 'exit 3:3' 'exit 0:0' 'kill -TERM $$:143'; do
		# (in a shell of its own: no "Killed" line from this one)
		rc=$(bash -c 'sh -c "$1"; echo $?' _ "${n%:*}" 2>/dev/null)
		check "do_signals/host: sh -c '${n%:*}': status ${n##*:}" eq rc "$rc" "${n##*:}"
		timeout -k 5 30 "$URSA" do -- sh -c "${n%:*}" </dev/null >/dev/null 2>&1
		rc=$?
		check "do_signals/ursa: ursa do sh -c '${n%:*}': status ${n##*:}" eq rc "$rc" "${n##*:}"
	done

	# the init: pid 1, named, no fd, confined as the command, non-dumpable
	timeout -k 5 30 "$URSA" do -- sh -c 'echo pid=$$ ppid=$PPID; echo comm1=$(cat /proc/1/comm)
		cat /proc/1/exe >/dev/null 2>&1 && echo exe1=readable || echo exe1=denied
		grep -E "^(NoNewPrivs|Seccomp|CapEff):" /proc/1/status | tr -d "\t" | sed "s/:/1=/"' \
		</dev/null >"$o" 2>"$o.err"
	check "do_signals/ursa: the command is not pid 1, the init is its parent" \
		grep -qE '^pid=[0-9]+ ppid=1$' "$o"
	expect_val "do_signals/ursa: pid 1 is ursa's minimal init" "$o" comm1 ursa-init
	expect_val "do_signals/ursa: the command cannot open /proc/1/exe (non-dumpable init)" \
		"$o" exe1 denied
	expect_val "do_signals/ursa: the init has no_new_privs" "$o" NoNewPrivs1 1
	expect_val "do_signals/ursa: the init is under the seccomp filter" "$o" Seccomp1 2
	expect_val "do_signals/ursa: the init has the command's capabilities" "$o" CapEff1 \
		00000000a00425fb
	dur=$(do_dur)
	"$URSA" do -- sleep "$dur" </dev/null >/dev/null 2>&1 &
	pid=$!
	poll 15 pgrep -f "^sleep $dur\$"
	init=$(ps -o ppid= -p "$(pgrep -f "^sleep $dur\$")" | tr -d ' ')
	check "do_signals/ursa: the init holds no fd" eq fds \
		"$(ls "/proc/$init/fd" 2>&1 | wc -l)" 0
	kill -TERM "$pid"
	poll 20 pid_gone "$pid"
	wait "$pid"
	check "do_signals/ursa: ... and SIGTERM ends it: 143" eq rc "$?" 143

	# a registered sandbox: `ursa kill ID TERM` reaches the command (its
	# minimal init needs a binary the sandbox can see: not below /tmp, where
	# a clone of this repository may live)
	local id ursa_id=$URSA vis=
	case $URSA in
	/tmp/* | /dev/* | /proc/* | /sys/*)
		vis=$(mktemp -d /var/tmp/ursa-it.XXXXXX) && cp "$URSA" "$vis/ursa" && ursa_id=$vis/ursa
		;;
	esac
	id=$(new_id dosig)
	dur=$(do_dur)
	"$ursa_id" --root "$(rt_root ursa)" do --id "$id" -- sleep "$dur" </dev/null >/dev/null 2>"$o.id.err" &
	pid=$!
	poll 15 pgrep -f "^sleep $dur\$"
	rt ursa kill "$id" TERM
	if poll 20 pid_gone "$pid"; then
		wait "$pid"
		rc=$?
	else
		kill -9 "$pid"
		rc=timeout
	fi
	check "do_signals/ursa: ursa kill ID TERM of ursa do --id: status 143" eq rc "$rc" 143
	[ -z "$vis" ] || rm -rf "$vis"
	no_leftovers do_signals ursa "$id" "^sleep $dur\$"
	# a registered sandbox that could not restore the init (the binary is
	# below /tmp, which the sandbox does not see): no minimal init, a warning
	cp "$URSA" "$WORK/ursa-copy"
	id=$(new_id dosig)
	"$WORK/ursa-copy" --root "$(rt_root ursa)" do --id "$id" -- cat /proc/1/comm \
		</dev/null >"$o.copy" 2>"$o.copy.err"
	check "do_signals/ursa: do --id with a binary the sandbox cannot see: warned, CMD is pid 1" \
		bash -c 'grep -qx cat "$1" && grep -q "cannot see the ursa binary" "$2"' \
		_ "$o.copy" "$o.copy.err"

	do_signals_tty
}

# Interactive: on a terminal, ^C and ^\ reach the command's whole process
# group (a pipeline ends as on the host).
do_signals_tty()
{
	local pty=$HERE/pty_intr.py c name script key want host got dur
	if ! command -v python3 >/dev/null; then
		skip_dep "do_signals/ursa: terminal cases" "no python3"
		return
	fi
	for c in '^C#exec sleep DUR#130' '^C#sleep DUR | cat; echo after#130' \
		'^\#exec sleep DUR#131'; do
		IFS='#' read -r name script want <<<"$c"
		key=$'\x03'
		[ "$name" = '^\' ] && key=$'\x1c'
		dur=$(do_dur)
		host=$("$pty" 20 "^sleep $dur\$" --key "$key" -- sh -c "${script//DUR/$dur}" 2>&1)
		dur=$(do_dur)
		got=$("$pty" 20 "^sleep $dur\$" --key "$key" -- "$URSA" do -- sh -c \
			"${script//DUR/$dur}" 2>&1)
		check "do_signals/host: $name on a terminal, sh -c '$script': status $want" \
			eq status "$host" "$want"
		check "do_signals/ursa: $name on a terminal, ursa do sh -c '$script': status $want" \
			eq status "$got" "$want"
		check "do_signals/ursa: $name on a terminal: no process left" \
			poll 5 no_process "^sleep $dur\$"
	done
}

# ---- global options ---------------------------------------------------------------------

case_cli()
{
	local r v rc o=$WORK/out/cli
	for r in "${RUNTIMES[@]}"; do
		for v in true false auto; do
			rt "$r" --rootless "$v" list >/dev/null 2>"$o.$r.err"
			rc=$?
			check "cli/$r: --rootless $v is accepted" eq rc "$rc" 0
		done
		rt "$r" --rootless=true list >/dev/null 2>&1
		check "cli/$r: --rootless=true is accepted" eq rc "$?" 0
	done
	"$URSA" --rootless bogus list >/dev/null 2>"$o.bad"
	rc=$?
	check "cli/ursa: --rootless bogus is refused, naming the option" bash -c \
		'[ "$1" != 0 ] && grep -q -- "--rootless bogus" "$2"' _ "$rc" "$o.bad"
	# --rootless used to overwrite --log-format
	rm -f "$o.log"
	"$URSA" --log "$o.log" --log-format json --rootless true state "$TOKEN-none" >/dev/null 2>&1
	check "cli/ursa: --rootless leaves --log-format json alone" \
		jq -e '.level == "error"' "$o.log"
	"$URSA" --log-format xml list >/dev/null 2>"$o.fmt"
	rc=$?
	check "cli/ursa: --log-format xml is refused" bash -c \
		'[ "$1" != 0 ] && grep -q "log-format" "$2"' _ "$rc" "$o.fmt"
	if [ -n "$RUNC" ]; then
		"$RUNC" --log-format xml list >/dev/null 2>&1
		check "cli/runc: --log-format xml is refused" nonzero rc "$?"
	fi
}

# ---- bad config.json --------------------------------------------------------------------

# badconfig NAME FILTER FIELD-REGEX: create must fail naming the field, and
# leave nothing behind. runc must fail too.
badconfig()
{
	local name=$1 filter=$2 re=$3 r id tok rc err
	for r in "${RUNTIMES[@]}"; do
		tok="$TOKEN-bad-$name-$r"
		id=$(new_id "bad-$name")
		mkbundle "bad-$name.$r" ".process.args = \$args | $filter" \
			--argjson args "$(long_args "$tok")"
		err=$WORK/out/bad-$name.$r.err
		rt_argv "$r"
		timeout -k 5 30 "${RT_ARGV[@]}" create --bundle "$BUNDLE" "$id" \
			</dev/null >/dev/null 2>"$err"
		rc=$?
		echo "rc=$([ "$rc" = 0 ] && echo 0 || echo nonzero)" >"$WORK/out/bad-$name.$r"
		check "badconfig/$r: $name: create fails" nonzero rc "$rc"
		if [ "$r" = ursa ]; then
			check "badconfig/$r: $name: the error names the field (/$re/)" \
				grep -qE -- "$re" "$err"
			[ -s "$err" ] && echo "        ($(head -c 200 "$err" | head -n 1))"
		fi
		local sout src
		sout=$(rt "$r" state "$id" 2>&1)
		src=$?
		check "badconfig/$r: $name: state says \"does not exist\"" bash -c \
			'[ "$1" != 0 ] && [[ $2 == *"does not exist"* ]] || { echo "rc=$1 out=$2"; exit 1; }' _ "$src" "$sout"
		[ "$rc" = 0 ] && rt "$r" delete --force "$id" >/dev/null 2>&1
		no_leftovers "badconfig-$name" "$r" "$id" "$tok"
	done
	same "bad-$name" 'rc'
}

case_badconfig()
{
	badconfig noargs 'del(.process.args)' 'args'
	badconfig emptyargs '.process.args = []' 'args'
	badconfig argstype '.process.args = "sh"' 'args'
	badconfig uidtype '.process.user.uid = "zero"' 'uid'
	badconfig nstype '.linux.namespaces += [{type: "bogusns"}]' 'bogusns'
	badconfig seccompaction '.linux.seccomp = {defaultAction: "SCMP_ACT_BOGUS"}' 'SCMP_ACT_BOGUS|defaultAction'
	badconfig syscallaction '.linux.seccomp = {defaultAction: "SCMP_ACT_ALLOW", syscalls: [{names: ["getpid"], action: "SCMP_ACT_NOPE"}]}' 'SCMP_ACT_NOPE|action'
	badconfig norootfs '.root.path = ($work + "/no-such-rootfs")' 'root|rootfs'
	badconfig relcwd '.process.cwd = "tmp"' 'cwd'
}

# not JSON at all: written by hand since jq cannot produce it
case_notjson()
{
	local r id rc err
	for r in "${RUNTIMES[@]}"; do
		id=$(new_id notjson)
		mkdir -p "$WORK/bundles/notjson.$r"
		printf '{"ociVersion": "1.0.2", "process": {' >"$WORK/bundles/notjson.$r/config.json"
		err=$WORK/out/notjson.$r.err
		rt "$r" create --bundle "$WORK/bundles/notjson.$r" "$id" </dev/null >/dev/null 2>"$err"
		rc=$?
		check "badconfig/$r: truncated JSON: create fails" nonzero rc "$rc"
		[ "$r" = ursa ] && check "badconfig/$r: truncated JSON: the error names config.json" \
			grep -qiE 'config\.json|json' "$err"
		[ "$rc" = 0 ] && rt "$r" delete --force "$id" >/dev/null 2>&1
		no_leftovers badconfig-notjson "$r" "$id"
	done
}

# ---- features still being written (skipped until the command exists) ----------------------

have_exec()
{
	"$URSA" exec --help >/dev/null 2>&1
}

have_update()
{
	"$URSA" update --help >/dev/null 2>&1
}

case_exec()
{
	local r id tok o rc
	if ! have_exec; then
		skip_dep "exec/ursa: exec runs a process in the container" "ursa exec not available yet"
		skip_dep "exec/ursa: exec exit status" "ursa exec not available yet"
		skip_dep "exec/ursa: exec --env, --cwd" "ursa exec not available yet"
		return
	fi
	for r in "${RUNTIMES[@]}"; do
		tok="$TOKEN-exec-$r"
		id=$(new_id exec)
		mkbundle "exec.$r" '.process.args = $args | .hostname = "uit-exec"' --argjson args "$(long_args "$tok")"
		rt "$r" create --bundle "$BUNDLE" "$id" </dev/null >/dev/null 2>&1
		rt "$r" start "$id" >/dev/null 2>&1
		poll 10 status_is "$r" "$id" running
		o=$WORK/out/exec.$r
		rt_argv "$r"
		timeout -k 5 30 "${RT_ARGV[@]}" exec --env UIT_X=1 --cwd /tmp \
			"$id" /bin/ursa-inside hostname + ids + caps + fds + cwd + env + nnp + exit 5 \
			</dev/null >"$o" 2>"$o.err"
		rc=$?
		echo "rc=$rc" >>"$o"
		check "exec/$r: exec exit status (5)" eq rc "$rc" 5
		expect_val "exec/$r: exec runs a process in the container (hostname)" "$o" hostname uit-exec
		expect_val "exec/$r: exec --cwd" "$o" cwd /tmp
		check "exec/$r: exec --env" grep -qx 'env=UIT_X=1' "$o"
		expect_val "exec/$r: exec leaks no fds" "$o" fds 0,1,2
		# in every one of the init's cgroups (ursa: cloned into v2, moved
		# itself into v1; docs/sandbox.md "Entering the cgroups")
		timeout -k 5 30 "${RT_ARGV[@]}" exec "$id" /bin/ursa-inside cgroup </dev/null >"$o.cg" 2>&1
		timeout -k 5 30 "${RT_ARGV[@]}" exec "$id" /bin/ursa-inside cgroup 1 </dev/null \
			>"$o.cg1" 2>&1
		check "exec/$r: exec runs in the init's cgroups" bash -c \
			'grep -q "^cgroup\.0=" "$1" && diff -q "$1" "$2" >/dev/null' _ "$o.cg" "$o.cg1"
		rt "$r" delete --force "$id" >/dev/null 2>&1
		no_leftovers exec "$r" "$id" "$tok"
	done
	same exec 'hostname|uid|gid|groups|Cap[A-Za-z]+|fds|cwd|NoNewPrivs|rc'
}

case_update()
{
	local r id tok pid cg
	if ! have_update; then
		skip_dep "update/ursa: update --pids-limit changes pids.max" "ursa update not available yet"
		return
	fi
	for r in "${RUNTIMES[@]}"; do
		tok="$TOKEN-upd-$r"
		id=$(new_id upd)
		mkbundle "upd.$r" '.process.args = $args' --argjson args "$(long_args "$tok")"
		rt "$r" create --bundle "$BUNDLE" "$id" </dev/null >/dev/null 2>&1
		pid=$(rt "$r" state "$id" | jq -r .pid)
		rt "$r" update --pids-limit 42 "$id" >"$WORK/out/upd.$r.err" 2>&1
		check "update/$r: update --pids-limit exits 0" eq rc "$?" 0
		cg=$(awk -F: '$2 == "pids" {print $3}' "/proc/$pid/cgroup")
		check "update/$r: update --pids-limit changes pids.max" eq pids.max \
			"$(cat "/sys/fs/cgroup/pids$cg/pids.max" 2>&1)" 42
		rt "$r" delete --force "$id" >/dev/null 2>&1
		no_leftovers update "$r" "$id" "$tok"
	done
}

case_hooks()
{
	local r id tok o g spid w src
	if ! have_exec; then
		skip_dep "hooks/ursa: prestart, poststart and poststop hooks run with the state on stdin" \
			"lead is implementing hooks with exec (ursa exec not available yet)"
		return
	fi
	for r in "${RUNTIMES[@]}"; do
		tok="$TOKEN-hooks-$r"
		id=$(new_id hooks)
		o=$WORK/out/hooks.$r
		rm -f "$o".*.json "$o".*.exe
		# the startContainer hook runs in the container: it says it started
		# (/mnt is $g on the host) and holds the exec until the test lets
		# it go: a read of the FIFO go, which the test writes a line to (if
		# the test dies first, delete --force ends the container)
		g=$WORK/out/hooks-gate.$r
		rm -rf "$g"
		mkdir -p "$g"
		mkfifo "$g/go"
		mkbundle "hooks.$r" '.process.args = $args | .hooks = {
			prestart: [{path: "/bin/sh", args: ["sh", "-c", ("cat > " + $o + ".prestart.json")]}],
			poststart: [{path: "/bin/sh", args: ["sh", "-c", ("cat > " + $o + ".poststart.json; "
				+ "p=$(sed -n \"s/.*\\\"pid\\\": *\\([0-9]*\\).*/\\1/p\" " + $o + ".poststart.json); "
				+ "readlink /proc/$p/exe > " + $o + ".poststart.exe")]}],
			poststop: [{path: "/bin/sh", args: ["sh", "-c", ("cat > " + $o + ".poststop.json")]}],
			startContainer: [{path: "/bin/sh", args: ["sh", "-c",
				"touch /mnt/started; read x < /mnt/go"]}]}
			| .mounts += [{destination: "/mnt", type: "bind", source: $g, options: ["rbind", "rw"]}]' \
			--argjson args "$(long_args "$tok")" --arg o "$o" --arg g "$g"
		rt "$r" create --bundle "$BUNDLE" "$id" </dev/null >/dev/null 2>&1
		check "hooks/$r: prestart hook ran with the state on stdin" \
			jq -e --arg id "$id" '.id == $id and .pid > 0' "$o.prestart.json"
		rt "$r" start "$id" >/dev/null 2>&1 &
		spid=$!
		check "hooks/$r: startContainer hook runs in the container" poll 10 test -e "$g/started"
		# ursa's start returns once the process is exec'd, so its poststart
		# hooks see the workload's program, not the init still running its
		# startContainer hook (runc's do see runc init then)
		if [ "$r" = ursa ]; then
			check "hooks/ursa: no poststart hook while a startContainer hook runs" \
				test ! -e "$o.poststart.json"
		fi
		# (read-write: the open never blocks, the line waits in the FIFO)
		exec {w}<>"$g/go"
		echo go >&"$w"
		wait "$spid"
		src=$?
		exec {w}>&-
		check "hooks/$r: start succeeds" test $src = 0
		check "hooks/$r: poststart hook ran" poll 5 test -s "$o.poststart.exe"
		if [ "$r" = ursa ]; then
			check "hooks/ursa: poststart runs after the process's exec" \
				grep -q "/bin/ursa-inside\$" "$o.poststart.exe"
		fi
		rt "$r" delete --force "$id" >/dev/null 2>&1
		check "hooks/$r: poststop hook ran" poll 5 test -s "$o.poststop.json"
		no_leftovers hooks "$r" "$id" "$tok"
	done
}

# process.terminal with --console-socket: the pty master arrives over the
# socket (python3 receives it) and the container's stdio is the pty slave.
case_console()
{
	local r id sock o rpid
	if ! have_exec; then
		skip_dep "console/ursa: --console-socket receives the pty master" \
			"lead is implementing the console with exec (ursa exec not available yet)"
		return
	fi
	if ! command -v python3 >/dev/null; then
		skip_dep "console/ursa: --console-socket receives the pty master" "no python3"
		return
	fi
	for r in "${RUNTIMES[@]}"; do
		id=$(new_id console)
		sock=$WORK/console-$r.sock
		o=$WORK/out/console.$r
		rm -f "$sock" "$o"
		python3 - "$sock" "$o" <<'PY' &
import array, os, socket, sys, time
path, out = sys.argv[1], sys.argv[2]
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(path + ".tmp"); s.listen(1); s.settimeout(20)
os.rename(path + ".tmp", path)  # listening before the path appears
c, _ = s.accept()
fds = array.array("i")
msg, anc, _, _ = c.recvmsg(4096, socket.CMSG_SPACE(4 * fds.itemsize))
for level, typ, data in anc:
    if level == socket.SOL_SOCKET and typ == socket.SCM_RIGHTS:
        fds.frombytes(data[: len(data) - (len(data) % fds.itemsize)])
buf = b""
if len(fds) == 1:
    end = time.time() + 20
    while time.time() < end:
        try:
            d = os.read(fds[0], 4096)
        except OSError:
            break
        if not d:
            break
        buf += d
with open(out, "w") as f:
    f.write("nfds=%d\nname=%s\n" % (len(fds), msg.decode(errors="replace")))
    f.write(buf.decode(errors="replace").replace("\r", ""))
PY
		rpid=$!
		poll 10 test -S "$sock"
		mkbundle "console.$r" '.process.args = $args | .process.terminal = true' \
			--argjson args "$(inside_args fds + exit 0)"
		rt "$r" create --console-socket "$sock" --bundle "$BUNDLE" "$id" </dev/null >/dev/null 2>"$o.err"
		rt "$r" start "$id" >/dev/null 2>&1
		poll 10 status_is "$r" "$id" stopped
		rt "$r" delete --force "$id" >/dev/null 2>&1
		timeout 25 tail --pid="$rpid" -f /dev/null
		expect_val "console/$r: --console-socket receives exactly one fd" "$o" nfds 1
		# ursa sends the slave's name, runc 1.1.5 "/dev/ptmx"
		check "console/$r: ... with the pty name as data" grep -qE '^name=/dev/(pts/[0-9]+|ptmx)$' "$o"
		check "console/$r: the container's stdio is the pty" grep -qE '^fd.0=/dev/pts/[0-9]+$' "$o"
	done
	same console 'nfds|fds'
}
