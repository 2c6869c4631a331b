package benchkit

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// ProcNumbers reads a /proc file of "key: number [unit]" lines, such as
// status or io, into a map; lines that do not fit are left out.
func ProcNumbers(path string) (map[string]int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	out := map[string]int64{}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		f := strings.Fields(v)
		if len(f) == 0 {
			continue
		}
		if n, err := strconv.ParseInt(f[0], 10, 64); err == nil {
			out[k] = n
		}
	}
	return out, nil
}

// ProcessCPUSeconds is the CPU time, user and system, process pid has
// used, from /proc/<pid>/stat (in clock ticks of 1/100 s, Linux's USER_HZ
// on every architecture Go supports).
func ProcessCPUSeconds(pid int) (float64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	return statCPUSeconds(pid, b)
}

// statCPUSeconds reads utime and stime from the text of /proc/<pid>/stat.
func statCPUSeconds(pid int, stat []byte) (float64, error) {
	// The command name, in parentheses, may hold spaces: count fields
	// after its closing parenthesis, where utime and stime are the 12th
	// and 13th (the 14th and 15th of the whole line).
	rest := stat[bytes.LastIndexByte(stat, ')')+1:]
	f := strings.Fields(string(rest))
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields after the command", pid, len(f))
	}
	var ticks int64
	for _, v := range f[11:13] {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/%d/stat: %w", pid, err)
		}
		ticks += n
	}
	return float64(ticks) / 100, nil
}
