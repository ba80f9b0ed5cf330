package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// nccl-detect on trees with more RDMA ports than NCCL reads: NCCL parses at
// most 32 entries of NCCL_IB_HCA and opens at most 32 ports (MAX_IB_DEVS),
// and keeps 1023 bytes of a value from its configuration file. Whatever the
// tree, the file must mean to NCCL what the log says: the ports logged
// "selected" are the ones NCCL uses, and no other.

// ncclPort is one port as NCCL names it.
type ncclPort struct {
	dev  string
	port int
}

// ncclHCAEntry is one entry of NCCL_IB_HCA as NCCL's parser keeps it.
type ncclHCAEntry struct {
	prefix string
	port   int // -1: every port
}

// ncclReadConf reads a configuration file as NCCL does: each line with a
// '=' is a variable, split at the first '=', of whose value NCCL keeps the
// first 1023 bytes; a line starting with '#' is a comment.
func ncclReadConf(text string) map[string]string {
	vars := map[string]string{}
	for _, line := range strings.Split(text, "\n") {
		k, v, ok := strings.Cut(line, "=")
		if !ok || strings.HasPrefix(line, "#") {
			continue
		}
		if len(v) > 1023 {
			v = v[:1023]
		}
		if _, set := vars[k]; !set {
			vars[k] = v
		}
	}
	return vars
}

// ncclParseHCA parses NCCL_IB_HCA as NCCL does: '^' (exclude), then '='
// (exact), then the list, of which the parser drops one more leading '^'
// or '=' (NCCL 2.2x) and reads at most 32 entries.
func ncclParseHCA(v string) (not, exact bool, list []ncclHCAEntry) {
	if not = strings.HasPrefix(v, "^"); not {
		v = v[1:]
	}
	if exact = strings.HasPrefix(v, "="); exact {
		v = v[1:]
	}
	if strings.HasPrefix(v, "^") || strings.HasPrefix(v, "=") {
		v = v[1:]
	}
	for _, e := range strings.Split(v, ",") {
		if len(list) == 32 {
			break
		}
		name, port, hasPort := strings.Cut(e, ":")
		if name == "" {
			continue
		}
		p := -1
		if hasPort {
			p, _ = strconv.Atoi(port)
		}
		list = append(list, ncclHCAEntry{name, p})
	}
	return not, exact, list
}

// ncclUses: the ports of all (in NCCL's device order) that NCCL opens with
// the configuration file conf.
func ncclUses(conf string, all []ncclPort) map[ncclPort]bool {
	vars := ncclReadConf(conf)
	used := map[ncclPort]bool{}
	if strings.EqualFold(vars["NCCL_NET"], "Socket") {
		return used
	}
	hca, set := vars["NCCL_IB_HCA"]
	not, exact, list := ncclParseHCA(hca)
	for _, p := range all {
		match := !set || len(list) == 0
		for _, e := range list {
			name := strings.HasPrefix(p.dev, e.prefix)
			if exact {
				name = p.dev == e.prefix
			}
			if name && (e.port == -1 || e.port == p.port) {
				match = true
			}
		}
		if match != not && len(used) < 32 {
			used[p] = true
		}
	}
	return used
}

var detectPortLine = regexp.MustCompile(`(?m)^nccl-detect: (\S+) port (\d+): .*: (selected|left out: .*)$`)

// loggedSelection: the ports the log calls selected.
func loggedSelection(log string) map[ncclPort]bool {
	selected := map[ncclPort]bool{}
	for _, m := range detectPortLine.FindAllStringSubmatch(log, -1) {
		if m[3] == "selected" {
			n, _ := strconv.Atoi(m[2])
			selected[ncclPort{m[1], n}] = true
		}
	}
	return selected
}

// roceDevice adds device dev with one ACTIVE RoCE port whose only GID is
// on netdev ndev, a netdev of this namespace; all lists every port added.
func (d *detectTree) roceDevice(all *[]ncclPort, dev, ndev string, i int) {
	d.t.Helper()
	*all = append(*all, ncclPort{dev, 1})
	pdir := filepath.Join("sys/class/infiniband", dev, "ports/1")
	d.put(filepath.Join(pdir, "state"), "4: ACTIVE\n")
	d.put(filepath.Join(pdir, "link_layer"), "Ethernet\n")
	d.put(filepath.Join(pdir, "gids/0"), fmt.Sprintf("fe80:0000:0000:0000:6c2a:11ff:fe01:%04x\n", i))
	d.put(filepath.Join(pdir, "gid_attrs/types/0"), "RoCE v2\n")
	d.put(filepath.Join(pdir, "gid_attrs/ndevs/0"), ndev+"\n")
	if err := os.MkdirAll(filepath.Join(d.sys, "class/net", ndev), 0o755); err != nil {
		d.t.Fatal(err)
	}
}

// checkNCCLReadsTheLog: the file is within what NCCL reads, and NCCL reads
// it as the log says, over all the ports of the tree (those the log does
// not name too).
func checkNCCLReadsTheLog(t *testing.T, res cmdResult, all []ncclPort, wantSelected int) {
	t.Helper()
	conf, log := string(res.stdout), string(res.stderr)
	for _, line := range strings.Split(strings.TrimSuffix(conf, "\n"), "\n") {
		if k, v, _ := strings.Cut(line, "="); len(v) > 1023 {
			t.Errorf("%s: a value of %d bytes; NCCL keeps 1023", k, len(v))
		}
	}
	if hca, ok := ncclReadConf(conf)["NCCL_IB_HCA"]; ok {
		if n := strings.Count(hca, ",") + 1; n > 32 {
			t.Errorf("NCCL_IB_HCA of %d entries; NCCL reads 32", n)
		}
	}
	selected := loggedSelection(log)
	if len(selected) != wantSelected {
		t.Errorf("%d ports logged selected, want %d", len(selected), wantSelected)
	}
	used := ncclUses(conf, all)
	var differ []string
	for _, p := range all {
		if used[p] != selected[p] {
			differ = append(differ, fmt.Sprintf("%s:%d (logged selected %v, NCCL uses %v)", p.dev, p.port, selected[p], used[p]))
		}
	}
	sort.Strings(differ)
	if len(differ) > 0 {
		t.Errorf("NCCL reads the file otherwise than logged: %s\nfile:\n%s\nlog:\n%s", strings.Join(differ, ", "), conf, log)
	}
}

// TestNcclDetectMorePortsThanNCCLReads: 40 and 64 devices, short and long
// names, on the default route's netdev or not.
func TestNcclDetectMorePortsThanNCCLReads(t *testing.T) {
	t.Parallel()
	long := func(i int) string { return fmt.Sprintf("%s%02d", strings.Repeat("x", 61), i) }
	short := func(i int) string { return fmt.Sprintf("mlx5_%d", i) }
	for _, tc := range []struct {
		name     string
		n        int
		dev      func(int) string
		onRoute  bool
		selected int
		log      []string
	}{
		// The exclusion of 40 covered the first 32: NCCL took mlx5_32..39.
		{"40 on the default route", 40, short, true, 0,
			[]string{"NCCL_NET=Socket", "no NCCL_IB_HCA: no port selected"}},
		{"64 long names on the default route", 64, long, true, 0,
			[]string{"NCCL_NET=Socket"}},
		// 40 selected: NCCL would open the first 32 of its own order.
		{"40 selected", 40, short, false, 32,
			[]string{"the 32 selected ports", "left out: past what NCCL reads of NCCL_IB_HCA"}},
		// 64 names of 63 bytes: 4,108 bytes of which NCCL kept 1,023.
		{"64 long names selected", 64, long, false, 15,
			[]string{"the 15 selected ports", "left out: past what NCCL reads of NCCL_IB_HCA"}},
	} {
		tc := tc
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d := newDetectTree(t)
			var all []ncclPort
			for i := 0; i < tc.n; i++ {
				ndev := fmt.Sprintf("eth%d", i+1)
				if tc.onRoute {
					ndev = "eth0"
				}
				d.roceDevice(&all, tc.dev(i), ndev, i)
			}
			d.procfs("eth0")
			res := d.detect("--out", "-")
			expectExit0(t, res)
			checkNCCLReadsTheLog(t, res, all, tc.selected)
			expectLog(t, res, tc.log...)
		})
	}
}

// TestNcclDetectNamesNCCLCannotHold: device names NCCL_IB_HCA cannot say
// (a ',' or ':' splits an entry; NCCL 2.2x drops a '^' or '=' at the start
// of the list) are not listed, and a list that must keep NCCL off every
// port then gives way to NCCL_NET=Socket: NCCL would take an unnamed one.
func TestNcclDetectNamesNCCLCannotHold(t *testing.T) {
	t.Parallel()
	type dev struct{ name, ndev string }
	for _, tc := range []struct {
		name     string
		devs     []dev
		selected int
		log      []string
	}{
		{"an unnamed device beside the default route's", []dev{{"mlx5_0", "eth0"}, {"a,b", "eth0"}}, 0,
			[]string{"NCCL_NET=Socket", "a name NCCL_IB_HCA cannot hold"}},
		{"^ and = first in the list", []dev{{"=mlx5_1", "eth1"}, {"^mlx5_2", "eth2"}, {"mlx5_3", "eth3"}}, 1,
			[]string{"NCCL_IB_HCA==mlx5_3: the 1 selected port"}},
		{"only ^ and = names, on the default route", []dev{{"=mlx5_1", "eth0"}, {"^mlx5_2", "eth0"}}, 0,
			[]string{"no NCCL_IB_HCA: no RDMA port found"}},
	} {
		tc := tc
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d := newDetectTree(t)
			var all []ncclPort
			for i, dv := range tc.devs {
				d.roceDevice(&all, dv.name, dv.ndev, i)
			}
			d.procfs("eth0")
			res := d.detect("--out", "-")
			expectExit0(t, res)
			if tc.selected > 0 || strings.Contains(string(res.stdout), "NCCL_IB_HCA") || strings.Contains(string(res.stdout), "NCCL_NET") {
				checkNCCLReadsTheLog(t, res, all, tc.selected)
			}
			expectLog(t, res, tc.log...)
		})
	}
}
