package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// `rdma-webhook nccl-detect` on sysfs and procfs trees built from show_gids
// output (testdata/show_gids-seed-8card.txt is the cloud guide's 8-card node):
// the exact configuration on stdout (--out -) or in a file (--out FILE), and
// exit 0 whatever it finds, a tree that is not there and misuse included.

const seedHCA = "NCCL_IB_HCA==mlx5_1,mlx5_2,mlx5_3,mlx5_4,mlx5_5,mlx5_6,mlx5_7,mlx5_8\n"

// detectTree is a sysfs root, a procfs root and a /dev root under one
// temporary directory.
type detectTree struct {
	t      *testing.T
	root   string
	sys    string
	proc   string
	dev    string
	locals []string // the namespace's IPv4 addresses, for net/fib_trie
	// withheld: devices whose /dev/infiniband/uverbsN the container is not
	// given (a shared device plugin); noDev: no /dev/infiniband at all.
	withheld map[string]bool
	noDev    bool
}

func newDetectTree(t *testing.T) *detectTree {
	root := t.TempDir()
	return &detectTree{t: t, root: root, sys: filepath.Join(root, "sys"), proc: filepath.Join(root, "proc"),
		dev: filepath.Join(root, "dev"), withheld: map[string]bool{}}
}

// nodes gives each device of sys/class/infiniband its uverbsN, as the
// kernel names it in sys/class/infiniband_verbs/uverbsN/ibdev, and the node
// in dev/infiniband unless withheld.
func (d *detectTree) nodes() {
	d.t.Helper()
	if !d.noDev {
		if err := os.MkdirAll(filepath.Join(d.dev, "infiniband"), 0o755); err != nil {
			d.t.Fatal(err)
		}
	}
	devs, _ := os.ReadDir(filepath.Join(d.sys, "class/infiniband"))
	for k, e := range devs {
		d.put(fmt.Sprintf("sys/class/infiniband_verbs/uverbs%d/ibdev", k), e.Name()+"\n")
		if !d.noDev && !d.withheld[e.Name()] {
			d.put(fmt.Sprintf("dev/infiniband/uverbs%d", k), "")
		}
	}
}

func (d *detectTree) put(rel, text string) {
	d.t.Helper()
	p := filepath.Join(d.root, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		d.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		d.t.Fatal(err)
	}
}

// showGids adds the GID tables of show_gids lines ("DEV PORT INDEX GID [IPv4]
// VER [NDEV]"): each port ACTIVE on the Ethernet link layer, with a table of
// table entries, the unlisted ones zero as sysfs shows empty slots. The
// netdevs and addresses are this namespace's.
func (d *detectTree) showGids(text string, table int) {
	d.t.Helper()
	for _, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		if len(f) < 5 || f[0] == "DEV" || f[0] == "---" {
			continue
		}
		dev, port, index, gid := f[0], f[1], f[2], f[3]
		ver, ndev, ipv4 := f[4], "", ""
		switch len(f) {
		case 7:
			ipv4, ver, ndev = f[4], f[5], f[6]
		case 6:
			ver, ndev = f[4], f[5]
		}
		pdir := filepath.Join("sys/class/infiniband", dev, "ports", port)
		d.put(filepath.Join(pdir, "state"), "4: ACTIVE\n")
		d.put(filepath.Join(pdir, "link_layer"), "Ethernet\n")
		d.put(filepath.Join(pdir, "gids", index), gid+"\n")
		typ := "IB/RoCE v1\n"
		if ver == "v2" {
			typ = "RoCE v2\n"
		}
		d.put(filepath.Join(pdir, "gid_attrs/types", index), typ)
		if ndev != "" {
			d.put(filepath.Join(pdir, "gid_attrs/ndevs", index), ndev+"\n")
			if err := os.MkdirAll(filepath.Join(d.sys, "class/net", ndev), 0o755); err != nil {
				d.t.Fatal(err)
			}
		}
		if ipv4 != "" {
			d.locals = append(d.locals, ipv4)
		}
		for i := 0; i < table; i++ {
			p := filepath.Join(d.root, pdir, "gids", fmt.Sprint(i))
			if _, err := os.Stat(p); os.IsNotExist(err) {
				d.put(filepath.Join(pdir, "gids", fmt.Sprint(i)), "0000:0000:0000:0000:0000:0000:0000:0000\n")
			}
		}
	}
}

// procfs: the default route out of defaultIf, and fib_trie with the
// addresses showGids saw.
func (d *detectTree) procfs(defaultIf string) {
	d.put("proc/net/route",
		"Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n"+
			defaultIf+"\t00000000\t013C000A\t0003\t0\t0\t0\t00000000\t0\t0\t0\n"+
			"eth0\t003C000A\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n")
	var b strings.Builder
	for _, table := range []string{"Main", "Local"} {
		fmt.Fprintf(&b, "%s:\n  +-- 0.0.0.0/0 3 0 5\n", table)
		for _, a := range d.locals {
			fmt.Fprintf(&b, "     +-- %s/24 2 0 2\n        |-- %s\n           /32 host LOCAL\n", a, a)
		}
	}
	d.put("proc/net/fib_trie", b.String())
}

func (d *detectTree) seedNode() {
	d.t.Helper()
	text, err := os.ReadFile("testdata/show_gids-seed-8card.txt")
	if err != nil {
		d.t.Fatal(err)
	}
	d.showGids(string(text), 16)
	d.procfs("eth0")
}

func (d *detectTree) detect(args ...string) cmdResult {
	d.t.Helper()
	d.nodes()
	return runBinary(d.t, nil, append([]string{"nccl-detect", "--sysfs-root", d.sys, "--proc-root", d.proc, "--dev-root", d.dev}, args...)...)
}

func expectExit0(t *testing.T, res cmdResult) {
	t.Helper()
	if res.exitCode != 0 {
		t.Fatalf("expected exit 0, got %d\nstderr: %s", res.exitCode, res.stderr)
	}
}

func expectText(t *testing.T, what, got, want string) {
	t.Helper()
	if got != want {
		t.Errorf("%s:\nexpected %q\ngot      %q", what, want, got)
	}
}

func expectLog(t *testing.T, res cmdResult, lines ...string) {
	t.Helper()
	for _, l := range lines {
		if !strings.Contains(string(res.stderr), l) {
			t.Errorf("expected %q in the log, got:\n%s", l, res.stderr)
		}
	}
}

// TestNcclDetectSeedNodeStdout: --out - prints the configuration, and
// nothing else, on stdout; the log on stderr says what was found and why.
func TestNcclDetectSeedNodeStdout(t *testing.T) {
	t.Parallel()
	d := newDetectTree(t)
	d.seedNode()
	res := d.detect("--out", "-")
	expectExit0(t, res)
	expectText(t, "stdout", string(res.stdout), seedHCA+"NCCL_IB_GID_INDEX=3\nNCCL_SOCKET_IFNAME==eth0\n")
	expectLog(t, res,
		"nccl-detect: default route: eth0\n",
		"nccl-detect: mlx5_0 port 1: ACTIVE, RoCE, 4 GIDs, netdev eth0, RoCE v2 IPv4 GID 3 (10.0.60.3): left out: its netdev carries the default route\n",
		"nccl-detect: mlx5_1 port 1: ACTIVE, RoCE, 4 GIDs, netdev eth1, RoCE v2 IPv4 GID 3 (25.11.128.2): selected\n",
		"nccl-detect: NCCL_IB_GID_INDEX=3: the RoCE v2 IPv4 GID of every selected port (NCCL behaviour relied on: none, every NCCL version reads it)\n")
	// No --out at all is stdout too.
	res = d.detect()
	expectExit0(t, res)
	expectText(t, "stdout without --out", string(res.stdout), seedHCA+"NCCL_IB_GID_INDEX=3\nNCCL_SOCKET_IFNAME==eth0\n")
}

// TestNcclDetectSeedNodeFile: --out FILE writes the file (readable by other
// users: the target containers may run as another one), replacing an old one.
func TestNcclDetectSeedNodeFile(t *testing.T) {
	t.Parallel()
	d := newDetectTree(t)
	d.seedNode()
	out := filepath.Join(t.TempDir(), "nccl.conf")
	if err := os.WriteFile(out, []byte("NCCL_IB_HCA=stale\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	res := d.detect("--out", out, "--hca", "=mlx5_1,mlx5_2,mlx5_3,mlx5_4,mlx5_5,mlx5_6,mlx5_7,mlx5_8")
	expectExit0(t, res)
	expectText(t, "stdout", string(res.stdout), "")
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	expectText(t, out, string(got), seedHCA+"NCCL_IB_GID_INDEX=3\nNCCL_SOCKET_IFNAME==eth0\n")
	if st, err := os.Stat(out); err != nil || st.Mode().Perm() != 0o644 {
		t.Errorf("%s: expected mode 0644, got %v (%v)", out, st.Mode().Perm(), err)
	}
	expectLog(t, res, "nccl-detect: wrote "+out+"\n")
	// The 4-card profile on this node, and the profile's own socket interface.
	res = d.detect("--out", out, "--hca", "=mlx5_1,mlx5_2,mlx5_3,mlx5_4", "--socket-ifname", "eth0")
	expectExit0(t, res)
	got, _ = os.ReadFile(out)
	expectText(t, out, string(got), "NCCL_IB_HCA==mlx5_1,mlx5_2,mlx5_3,mlx5_4\nNCCL_IB_GID_INDEX=3\nNCCL_SOCKET_IFNAME=eth0\n")
	expectLog(t, res, "mlx5_5 port 1: ACTIVE, RoCE, 4 GIDs, netdev eth5, RoCE v2 IPv4 GID 3 (25.11.128.130): left out: not in --hca\n")
}

// TestNcclDetectContainerSparse: a container's own table with a gap (its
// GIDs at 0, 1, 4, 5): the GID index is 5, found at run time.
func TestNcclDetectContainerSparse(t *testing.T) {
	t.Parallel()
	d := newDetectTree(t)
	var b strings.Builder
	for i := 1; i <= 8; i++ {
		a := (i-1)*32 + 2
		fmt.Fprintf(&b, "mlx5_%d 1 0 fe80:0000:0000:0000:6c2a:11ff:fe01:000%d v1 eth%d\n", i, i, i)
		fmt.Fprintf(&b, "mlx5_%d 1 1 fe80:0000:0000:0000:6c2a:11ff:fe01:000%d v2 eth%d\n", i, i, i)
		fmt.Fprintf(&b, "mlx5_%d 1 4 0000:0000:0000:0000:0000:ffff:190b:80%02x 25.11.128.%d v1 eth%d\n", i, a, a, i)
		fmt.Fprintf(&b, "mlx5_%d 1 5 0000:0000:0000:0000:0000:ffff:190b:80%02x 25.11.128.%d v2 eth%d\n", i, a, a, i)
	}
	d.showGids(b.String(), 8)
	if err := os.MkdirAll(filepath.Join(d.sys, "class/net/eth0"), 0o755); err != nil {
		t.Fatal(err)
	}
	d.procfs("eth0")
	res := d.detect("--out", "-")
	expectExit0(t, res)
	expectText(t, "stdout", string(res.stdout), seedHCA+"NCCL_IB_GID_INDEX=5\nNCCL_SOCKET_IFNAME==eth0\n")
}

// TestNcclDetectBadRoot: roots that do not exist still exit 0, with an
// empty configuration and the reason in the log.
func TestNcclDetectBadRoot(t *testing.T) {
	t.Parallel()
	bad := filepath.Join(t.TempDir(), "missing")
	res := runBinary(t, nil, "nccl-detect", "--sysfs-root", bad, "--proc-root", bad, "--out", "-")
	expectExit0(t, res)
	expectText(t, "stdout", string(res.stdout), "")
	expectLog(t, res, "no RDMA devices: "+bad+"/class/infiniband does not exist",
		"cannot open "+bad+"/net/route", "no NCCL_IB_HCA: no RDMA port found")
	out := filepath.Join(t.TempDir(), "nccl.conf")
	res = runBinary(t, nil, "nccl-detect", "--sysfs-root", bad, "--proc-root", bad, "--out", out)
	expectExit0(t, res)
	if got, err := os.ReadFile(out); err != nil || len(got) != 0 {
		t.Errorf("%s: expected an empty file, got %q (%v)", out, got, err)
	}
	// An --out that cannot be written: still 0.
	res = runBinary(t, nil, "nccl-detect", "--sysfs-root", bad, "--proc-root", bad, "--out", filepath.Join(bad, "x", "nccl.conf"))
	expectExit0(t, res)
	expectLog(t, res, "cannot create a file beside", "NCCL keeps its own defaults")
}

// TestNcclDetectMisuse: a usage error writes nothing and exits 0 (an init
// container that failed would keep the pod from starting).
func TestNcclDetectMisuse(t *testing.T) {
	t.Parallel()
	d := newDetectTree(t)
	d.seedNode()
	out := filepath.Join(t.TempDir(), "nccl.conf")
	for _, args := range [][]string{
		{"--hca", "=mlx5_1:0"},
		{"--socket-ifname", "eth0\nNCCL_IB_DISABLE=1"},
		{"--no-such-flag"},
		{"stray"},
	} {
		res := d.detect(append([]string{"--out", out}, args...)...)
		expectExit0(t, res)
		expectLog(t, res, "nothing written, NCCL keeps its own defaults", "Usage: rdma-webhook nccl-detect")
		if _, err := os.Stat(out); !os.IsNotExist(err) {
			t.Errorf("%q: expected no %s, got %v", args, out, err)
		}
	}
}

func TestNcclDetectHelp(t *testing.T) {
	t.Parallel()
	res := runBinary(t, nil, "nccl-detect", "--help")
	expectExit0(t, res)
	for _, flag := range []string{"--sysfs-root DIR", "--proc-root DIR", "--dev-root DIR", "--out FILE|-", "--hca LIST", "--socket-ifname VALUE"} {
		if !strings.Contains(string(res.stdout), flag) {
			t.Errorf("nccl-detect --help: expected %q in\n%s", flag, res.stdout)
		}
	}
	res = runBinary(t, nil, "--help")
	if !strings.Contains(string(res.stdout), "nccl-detect") {
		t.Errorf("--help: expected nccl-detect among the commands:\n%s", res.stdout)
	}
}

// TestMixedExampleMatchesTheSeedNode: the 8-card H100 profile of
// manifests/examples/profiles-mixed.json lists the NICs that detection
// chooses on the cloud guide's 8-card node, mlx5_1..mlx5_8, and not mlx5_0,
// the management NIC on eth0 with the default route: copied as it is, the
// example must not put that NIC into NCCL_IB_HCA, nor leave mlx5_8 out.
func TestMixedExampleMatchesTheSeedNode(t *testing.T) {
	text, err := os.ReadFile("../../manifests/examples/profiles-mixed.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Profiles []struct {
			Name string   `json:"name"`
			HCA  []string `json:"hca"`
		} `json:"profiles"`
	}
	if err := json.Unmarshal(text, &doc); err != nil {
		t.Fatal(err)
	}
	d := newDetectTree(t)
	d.seedNode()
	res := d.detect("--out", "-")
	expectExit0(t, res)
	found := 0
	for _, p := range doc.Profiles {
		if len(p.HCA) == 0 || !strings.Contains(p.Name, "8card") {
			continue
		}
		found++
		expectText(t, p.Name+"'s hca as NCCL_IB_HCA", "NCCL_IB_HCA=="+strings.Join(p.HCA, ",")+"\n", seedHCA)
		if !strings.HasPrefix(string(res.stdout), seedHCA) {
			t.Errorf("detection on the guide's 8-card node: %q does not start with %q", res.stdout, seedHCA)
		}
	}
	if found == 0 {
		t.Fatalf("no 8-card profile with an hca list in the example:\n%s", text)
	}
}

// TestNcclDetectOnlyDevicesTheContainerCanOpen: a shared device plugin
// without an exclusive network namespace leaves every HCA of the host in
// sysfs and gives the container some uverbs nodes; no /dev/infiniband at
// all means no RDMA device, and no NCCL_IB_HCA.
func TestNcclDetectOnlyDevicesTheContainerCanOpen(t *testing.T) {
	t.Parallel()
	d := newDetectTree(t)
	d.seedNode()
	for _, dev := range []string{"mlx5_2", "mlx5_4", "mlx5_6", "mlx5_8"} {
		d.withheld[dev] = true
	}
	res := d.detect("--out", "-")
	expectExit0(t, res)
	expectText(t, "stdout", string(res.stdout), "NCCL_IB_HCA==mlx5_1,mlx5_3,mlx5_5,mlx5_7\nNCCL_IB_GID_INDEX=3\nNCCL_SOCKET_IFNAME==eth0\n")
	expectLog(t, res, "nccl-detect: mlx5_4: left out: sysfs shows it, but "+d.dev+"/infiniband/uverbs4 does not open (No such file or directory): the container was not given it\n",
		"nccl-detect: mlx5_4 port 1: ACTIVE, RoCE, 4 GIDs, netdev eth4, RoCE v2 IPv4 GID 3 (25.11.128.98): left out: this container cannot open the device\n")

	d = newDetectTree(t)
	d.seedNode()
	d.noDev = true
	res = d.detect("--out", "-")
	expectExit0(t, res)
	expectText(t, "stdout", string(res.stdout), "NCCL_SOCKET_IFNAME==eth0\n")
	expectLog(t, res, "nccl-detect: no RDMA device given to this container: "+d.dev+"/infiniband does not exist\n",
		"nccl-detect: no NCCL_IB_HCA: this container has no /dev/infiniband, so NCCL can open no RDMA device and uses sockets\n")
}

func (d *detectTree) detectEnv(env []string, args ...string) cmdResult {
	d.t.Helper()
	d.nodes()
	res, exited := runBinaryWithin(d.t, env, 2*time.Minute, append([]string{"nccl-detect", "--sysfs-root", d.sys, "--proc-root", d.proc, "--dev-root", d.dev}, args...)...)
	if !exited {
		d.t.Fatalf("nccl-detect did not exit: %s", res.stderr)
	}
	return res
}

// mismatchLine: the one stderr line that is a JSON object, decoded.
func mismatchLine(t *testing.T, res cmdResult) map[string]interface{} {
	t.Helper()
	var found map[string]interface{}
	for _, l := range strings.Split(string(res.stderr), "\n") {
		if strings.HasPrefix(l, "{") {
			if found != nil {
				t.Fatalf("more than one JSON line:\n%s", res.stderr)
			}
			if err := json.Unmarshal([]byte(l), &found); err != nil {
				t.Fatalf("%q: %v", l, err)
			}
		}
	}
	return found
}

// TestNcclDetectJobListMismatch: the job's exact list on a node that gives
// only part of it: the usable part is written, one JSON line names the node
// (NODE_NAME), what was expected, found and missing; exit 0 unless
// --require-hca, then 1.
func TestNcclDetectJobListMismatch(t *testing.T) {
	t.Parallel()
	d := newDetectTree(t)
	d.seedNode()
	d.withheld["mlx5_7"], d.withheld["mlx5_8"] = true, true
	list := "=mlx5_1,mlx5_2,mlx5_3,mlx5_4,mlx5_5,mlx5_6,mlx5_7,mlx5_8"
	env := []string{"NODE_NAME=gpu-node-17"}
	for _, require := range []bool{false, true} {
		args := []string{"--out", "-", "--hca", list}
		want := 0
		if require {
			args, want = append(args, "--require-hca"), 1
		}
		res := d.detectEnv(env, args...)
		if res.exitCode != want {
			t.Fatalf("require %v: exit %d, expected %d\n%s", require, res.exitCode, want, res.stderr)
		}
		expectText(t, "stdout", string(res.stdout), "NCCL_IB_HCA==mlx5_1,mlx5_2,mlx5_3,mlx5_4,mlx5_5,mlx5_6\nNCCL_IB_GID_INDEX=3\nNCCL_SOCKET_IFNAME==eth0\n")
		got := mismatchLine(t, res)
		want2 := map[string]interface{}{"event": "nccl-detect-hca-mismatch", "node": "gpu-node-17",
			"expected": []interface{}{"mlx5_1", "mlx5_2", "mlx5_3", "mlx5_4", "mlx5_5", "mlx5_6", "mlx5_7", "mlx5_8"},
			"found":    []interface{}{"mlx5_1", "mlx5_2", "mlx5_3", "mlx5_4", "mlx5_5", "mlx5_6"},
			"missing":  []interface{}{"mlx5_7", "mlx5_8"}, "written": "=mlx5_1,mlx5_2,mlx5_3,mlx5_4,mlx5_5,mlx5_6"}
		if !jsonEqual(got, want2) {
			t.Errorf("require %v: mismatch line %s, expected %s", require, compact(got), compact(want2))
		}
	}
	// The whole list here: no JSON line, exit 0 with --require-hca.
	res := d.detectEnv(env, "--out", "-", "--hca", "=mlx5_1,mlx5_2", "--require-hca")
	expectExit0(t, res)
	if got := mismatchLine(t, res); got != nil {
		t.Errorf("unexpected mismatch line %s", compact(got))
	}
}

// TestNcclDetectDRASriovEnvironment: dra-driver-sriov's CDI environment
// (SRIOVNETWORK_<device>_RDMA_DEVICE=<RDMA device>, next to its _RDMA_UVERB
// and the like) names the devices DRA allocated: they are preferred over
// what sysfs shows.
func TestNcclDetectDRASriovEnvironment(t *testing.T) {
	t.Parallel()
	d := newDetectTree(t)
	d.seedNode()
	env := []string{
		"SRIOVNETWORK_PCI_ADDRESSES=0000:3b:00.2,0000:5e:00.3",
		"SRIOVNETWORK_vf_3_RDMA_UVERB=/dev/infiniband/uverbs3",
		"SRIOVNETWORK_vf_3_RDMA_DEVICE=mlx5_3",
		"SRIOVNETWORK_vf_5_RDMA_CM=/dev/infiniband/rdma_cm",
		"SRIOVNETWORK_vf_5_RDMA_DEVICE=mlx5_5",
	}
	res := d.detectEnv(env, "--out", "-")
	expectExit0(t, res)
	expectText(t, "stdout", string(res.stdout), "NCCL_IB_HCA==mlx5_3,mlx5_5\nNCCL_IB_GID_INDEX=3\nNCCL_SOCKET_IFNAME==eth0\n")
	expectLog(t, res, "nccl-detect: mlx5_4 port 1: ACTIVE, RoCE, 4 GIDs, netdev eth4, RoCE v2 IPv4 GID 3 (25.11.128.98): left out: DRA allocated other devices\n")
}

// TestNcclDetectNodeModeIsNotAbsence: a uverbs node whose mode keeps the
// init container's user (65532) out is still the pod's (the training
// container may run as root): kept, with a log line; only a node that is
// not there is left out. Runs as root only (root ignores modes).
func TestNcclDetectNodeModeIsNotAbsence(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("needs root to run nccl-detect as user 65532")
	}
	d := newDetectTree(t)
	d.seedNode()
	d.withheld["mlx5_8"] = true
	d.nodes()
	if err := os.Chmod(filepath.Join(d.dev, "infiniband", "uverbs1"), 0o600); err != nil { // mlx5_1's
		t.Fatal(err)
	}
	// The test's own directories readable by 65532 (t.TempDir makes them
	// 0700); never the system's temporary directory above them.
	for p := d.root; p != filepath.Clean(os.TempDir()) && p != "/"; p = filepath.Dir(p) {
		if err := os.Chmod(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// The binary too: the checkout may sit where 65532 cannot reach (a
	// clone under mktemp -d, or /root), so it runs from a copy beside the tree.
	bin := filepath.Join(d.root, "rdma-webhook")
	data, err := os.ReadFile(binaryPath())
	if err != nil {
		t.Fatal(err)
	}
	writeExecutable(t, bin, data)
	cmd := exec.Command(bin, "nccl-detect", "--sysfs-root", d.sys, "--proc-root", d.proc, "--dev-root", d.dev, "--out", "-")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65532, Gid: 65532}}
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("nccl-detect as 65532: %v\n%s", err, stderr.String())
	}
	expectText(t, "stdout", stdout.String(), "NCCL_IB_HCA==mlx5_1,mlx5_2,mlx5_3,mlx5_4,mlx5_5,mlx5_6,mlx5_7\nNCCL_IB_GID_INDEX=3\nNCCL_SOCKET_IFNAME==eth0\n")
	if !strings.Contains(stderr.String(), "nccl-detect: mlx5_1: kept: "+d.dev+"/infiniband/uverbs1 is there but its mode keeps this user out (Permission denied)") {
		t.Errorf("no line for mlx5_1's mode:\n%s", stderr.String())
	}
}
