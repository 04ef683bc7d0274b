#!/bin/bash
# boot-systemd.sh ROOT: boots systemd as PID 1 of the Debian root ROOT, in new PID, mount, network, UTS,
# IPC and cgroup namespaces; runs until killed (SIGTERM or SIGINT ends everything inside).
#
# Why these steps (systemd-nspawn would do them, but needs a systemd-run host, which this is not):
# - pivot_root, not chroot: the kernel refuses a new user namespace to a chrooted process (unshare(2):
#   EPERM "the caller is in a chroot environment"), so every unit with PrivateUsers=yes would fail with
#   217/USER under chroot although the unit is right.
# - an own network namespace: the service's port 5000 clashes with nothing on this machine, and the
#   README's `curl http://localhost:5000/health` is run as written. systemd brings up its loopback.
# - an own cgroup, made here below this script's cgroup and entered before the cgroup namespace is
#   made: systemd inside sees it as the root of its cgroup tree and puts its slices there, not at the
#   root of this machine's hierarchy. Removed again when systemd is gone.
# - a console that discards: systemd logs to the journal, which the test reads.
# - container=: systemd behaves as in a container (no hardware, no kernel command line of its own).
# - no CAP_SYS_MODULE in the bounding set, as container managers do: the root holds no modules of this
#   machine's kernel, and systemd-modules-load.service (skipped without the capability) fails on
#   Debian 13 when it cannot open them (libkmod: "Operation not supported").
set -euo pipefail

if [ "${2:-}" = --inside ]; then
	# PID 1 of the new namespaces: mount the API file systems into the root, make it / and exec systemd.
	root=$1
	mount --bind "$root" "$root"
	mount -t proc -o nosuid,nodev,noexec proc "$root/proc"
	mount -t sysfs -o ro,nosuid,nodev,noexec sysfs "$root/sys"
	mount -t cgroup2 -o nosuid,nodev,noexec cgroup2 "$root/sys/fs/cgroup"
	mount -t tmpfs -o mode=0755,nosuid tmpfs "$root/dev"
	# Own device nodes with the usual modes, not binds of this machine's: a host may have changed
	# them (this one's /dev/null is crw--w---- root:tty, which no service user can open).
	while read -r node major minor mode; do
		mknod -m "$mode" "$root/dev/$node" c "$major" "$minor"
	done <<-NODES
		null 1 3 0666
		zero 1 5 0666
		full 1 7 0666
		random 1 8 0666
		urandom 1 9 0666
		tty 5 0 0666
		console 1 3 0600
	NODES
	mkdir -p "$root/dev/pts" "$root/dev/shm"
	mount -t devpts -o newinstance,ptmxmode=0666,mode=0620 devpts "$root/dev/pts"
	ln -s pts/ptmx "$root/dev/ptmx"
	mount -t tmpfs -o mode=0755,nosuid,nodev tmpfs "$root/run"
	cd "$root"
	mkdir -p .host
	pivot_root . .host
	cd /
	umount -l /.host
	rmdir /.host
	exec setpriv --bounding-set -sys_module env -i container=voice-hub-test PATH=/usr/sbin:/usr/bin:/sbin:/bin /lib/systemd/systemd --system --log-target=journal
fi

root=$(realpath "$1")
[ -x "$root/lib/systemd/systemd" ] || { echo "boot-systemd: $root has no /lib/systemd/systemd" >&2; exit 1; }

unified=$(awk '$9 == "cgroup2" { print $5; exit }' /proc/self/mountinfo)
[ -n "$unified" ] || { echo "boot-systemd: no cgroup2 file system mounted on this machine" >&2; exit 1; }
own=$(sed -n 's/^0:://p' /proc/self/cgroup)
cgroup="$unified${own%/}/voice-hub-boot-$$"
mkdir "$cgroup"
echo $$ >"$cgroup/cgroup.procs"

# The namespaces die with their PID 1; --kill-child kills it when unshare dies. unshare itself blocks
# SIGTERM and SIGINT while it waits, so it is ended with SIGKILL: the root is thrown away anyway.
unshare --pid --fork --kill-child --mount --propagation private --net --uts --ipc --cgroup -- "$0" "$root" --inside &
child=$!
trap 'kill -KILL $child 2>/dev/null || true' TERM INT
# A test killed at its timeout runs no clean-up: the boot ends with the process that started it, or a
# booted root outlived it and the test runner waited on forever for its output to close.
starter=$PPID
(
	while kill -0 "$starter" 2>/dev/null; do sleep 1; done
	kill -KILL $child 2>/dev/null || true
) </dev/null >/dev/null 2>&1 &
watcher=$!
status=0
wait $child || status=$?
# A trapped signal ends the first wait early: wait again for unshare itself.
wait $child 2>/dev/null || true
kill $watcher 2>/dev/null || true

# Back to where this script came from, then the (now empty) cgroup tree, deepest first.
echo $$ >"$unified${own%/}/cgroup.procs"
for _ in $(seq 50); do
	find "$cgroup" -depth -type d -exec rmdir {} + 2>/dev/null || true
	[ -d "$cgroup" ] || break
	sleep 0.1
done
[ -d "$cgroup" ] && echo "boot-systemd: could not remove $cgroup" >&2
exit $status
