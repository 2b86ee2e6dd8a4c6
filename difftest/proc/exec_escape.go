// Descendants of an exec program that leave its process group: a program
// that calls setsid (or setpgid) for a helper escapes the group kill and
// would outlive the case and difftest itself. Each run tags the program's
// environment (ExecRunEnv); after the run, every process of this user
// whose /proc/PID/environ holds the tag and that is not in the program's
// (already killed) group is killed and named in a warning.
//
// Why a tag and not PR_SET_CHILD_SUBREAPER: a subreaper inherits every
// orphan of the whole process, and a harness that then reaps or kills
// children it did not start could steal the exit status another part of
// the program (the GPU worker, a concurrent run) waits for. The tag names
// exactly this run's descendants, wherever they moved. A descendant that
// clears its environment is not found; its stderr is given up on after
// execStderrGrace.

package proc

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// execEscapeRounds bounds the scans: each kills what the last one found,
// so a process that forks while it is being killed is caught by the next.
const execEscapeRounds = 5

// execKillEscaped kills every process tagged with tag ("NAME=VALUE") that
// is outside process group pgid, and returns one warning naming them, or
// nil when there were none. Without /proc it finds nothing.
func execKillEscaped(tag string, pgid int) []string {
	names := KillEscaped(tag, pgid)
	if len(names) == 0 {
		return nil
	}
	return []string{fmt.Sprintf("the exec program left %d process(es) running outside its process group (setsid or setpgid escapes the group kill); killed after the run: %s",
		len(names), strings.Join(names, "; "))}
}

// KillEscaped kills every live process of this user whose environment
// holds the entry tag ("NAME=VALUE") and whose process group is not pgid
// (the group of the program that was tagged, killed separately), in up to
// execEscapeRounds rounds so that one forked while it is killed is caught
// too. It returns the command lines of those it killed (control
// characters escaped, at most 120 runes each), nil when there were none
// or without /proc. The exec and serve paths use it, and so does the GPU
// worker's (package bridge).
func KillEscaped(tag string, pgid int) []string {
	seen := map[int]bool{}
	var names []string
	for range execEscapeRounds {
		found := execTagged(tag, pgid)
		fresh := 0
		for _, p := range found {
			if seen[p.pid] {
				continue
			}
			seen[p.pid] = true
			fresh++
			_ = syscall.Kill(p.pid, syscall.SIGKILL)
			names = append(names, p.cmdline)
		}
		if fresh == 0 {
			break
		}
	}
	return names
}

type execProc struct {
	pid     int
	cmdline string
}

// execTagged lists the live processes whose environment holds tag and
// whose process group is not pgid. Processes of other users (environ
// unreadable) and zombies are skipped.
func execTagged(tag string, pgid int) []execProc {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	self := os.Getpid()
	want := []byte(tag)
	var out []execProc
	for _, ent := range ents {
		pid, err := strconv.Atoi(ent.Name())
		if err != nil || pid == self {
			continue
		}
		dir := "/proc/" + ent.Name() + "/"
		env, err := os.ReadFile(dir + "environ")
		if err != nil || !execHasEntry(env, want) {
			continue
		}
		stat, err := os.ReadFile(dir + "stat")
		if err != nil {
			continue
		}
		state, group, ok := execStat(stat)
		if !ok || state == 'Z' || state == 'X' || group == pgid {
			continue
		}
		out = append(out, execProc{pid: pid, cmdline: execCmdline(dir)})
	}
	return out
}

// execHasEntry reports whether the NUL-separated environment block env
// holds the entry want exactly.
func execHasEntry(env, want []byte) bool {
	for len(env) > 0 {
		entry := env
		if i := bytes.IndexByte(env, 0); i >= 0 {
			entry, env = env[:i], env[i+1:]
		} else {
			env = nil
		}
		if bytes.Equal(entry, want) {
			return true
		}
	}
	return false
}

// execStat parses the state and process group out of /proc/PID/stat
// ("pid (comm) S ppid pgrp ..."; comm may hold spaces and parentheses).
func execStat(stat []byte) (state byte, pgrp int, ok bool) {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, 0, false
	}
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 3 || len(f[0]) != 1 {
		return 0, 0, false
	}
	g, err := strconv.Atoi(f[2])
	if err != nil {
		return 0, 0, false
	}
	return f[0][0], g, true
}

// execCmdline renders /proc/PID/cmdline for a warning: arguments joined
// by spaces, control characters escaped, at most 120 runes; "a process"
// when it cannot be read. It names no pid, so that the same escape in the
// case's two runs is one warning.
func execCmdline(dir string) string {
	b, err := os.ReadFile(dir + "cmdline")
	if err != nil || len(b) == 0 {
		return "a process"
	}
	s := strings.Join(strings.Split(strings.TrimRight(string(b), "\x00"), "\x00"), " ")
	s = strconv.QuoteToGraphic(s)
	r := []rune(s[1 : len(s)-1])
	if len(r) > 120 {
		r = append(r[:117], []rune("...")...)
	}
	return string(r)
}
