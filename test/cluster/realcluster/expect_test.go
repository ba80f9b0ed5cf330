package realcluster

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// The shipped profiles (manifests/profiles.json), as docs/profiles.md shows them.
var shippedEnv = map[string]string{
	"NCCL_IB_DISABLE":            "0",
	"NCCL_SOCKET_IFNAME":         "eth0",
	"NCCL_IB_TIMEOUT":            "22",
	"NCCL_IB_QPS_PER_CONNECTION": "8",
}

const (
	hca8 = "=mlx5_1,mlx5_2,mlx5_3,mlx5_4,mlx5_5,mlx5_6,mlx5_7,mlx5_8"
	hca4 = "=mlx5_1,mlx5_2,mlx5_3,mlx5_4"
)

// want is what a mutated pod must carry: the profile, its HCA list, and
// the variables the user declared (which keep their values).
type want struct {
	profile string
	hca     string
	userEnv map[string]string // declared by the job: kept, never doubled
	// Variables the user declared through envFrom: the webhook must not add them.
	fromEnvFrom []string
	// Pod Security forbids added capabilities in the namespace, or the
	// container runs as non-root: no IPC_LOCK.
	noIPCLock bool
}

func envOf(c *corev1.Container) map[string][]string {
	m := map[string][]string{}
	for _, e := range c.Env {
		m[e.Name] = append(m[e.Name], e.Value)
	}
	return m
}

func container(t testing.TB, p *corev1.Pod, name string) *corev1.Container {
	t.Helper()
	for i := range p.Spec.Containers {
		if p.Spec.Containers[i].Name == name {
			return &p.Spec.Containers[i]
		}
	}
	t.Fatalf("pod %s has no container %q", p.Name, name)
	return nil
}

// requireMutated checks every addition of docs/profiles.md (step 4) on the stored pod's
// container c, and that nothing is doubled.
func requireMutated(t testing.TB, p *corev1.Pod, c string, w want) {
	t.Helper()
	what := p.Namespace + "/" + p.Name
	if got := p.Annotations["rdma-webhook.io/injected"]; got != w.profile {
		t.Errorf("%s: annotation rdma-webhook.io/injected = %q, want %q", what, got, w.profile)
	}
	ctr := container(t, p, c)
	env := envOf(ctr)
	for name, vals := range env {
		if len(vals) > 1 {
			t.Errorf("%s: %s declared %d times: %q", what, name, len(vals), vals)
		}
	}
	expect := map[string]string{"NCCL_IB_HCA": w.hca}
	for k, v := range shippedEnv {
		expect[k] = v
	}
	for k, v := range w.userEnv {
		expect[k] = v
	}
	for _, k := range w.fromEnvFrom {
		delete(expect, k)
		if vals, ok := env[k]; ok {
			t.Errorf("%s: %s is declared through envFrom, yet the webhook added %q", what, k, vals)
		}
	}
	for k, v := range expect {
		if vals := env[k]; len(vals) != 1 || vals[0] != v {
			t.Errorf("%s: env %s = %q, want [%q]", what, k, vals, v)
		}
	}
	if w.noIPCLock {
		requireNoIPCLock(t, p, ctr)
	} else {
		requireIPCLock(t, p, ctr)
	}
	requireShm(t, p, ctr)
	if p.Spec.SchedulerName != "volcano" {
		t.Errorf("%s: schedulerName %q, want volcano", what, p.Spec.SchedulerName)
	}
	one := resource.MustParse("1")
	for kind, rl := range map[string]corev1.ResourceList{"limits": ctr.Resources.Limits, "requests": ctr.Resources.Requests} {
		if q, ok := rl["rdma/hca"]; !ok || q.Cmp(one) != 0 {
			t.Errorf("%s: %s rdma/hca = %v, want 1", what, kind, rl["rdma/hca"])
		}
	}
}

// hasIPCLock: IPC_LOCK is in container c's capabilities.add.
func hasIPCLock(c *corev1.Container) bool {
	if c.SecurityContext == nil || c.SecurityContext.Capabilities == nil {
		return false
	}
	for _, cap := range c.SecurityContext.Capabilities.Add {
		if cap == "IPC_LOCK" {
			return true
		}
	}
	return false
}

func requireNoIPCLock(t testing.TB, p *corev1.Pod, c *corev1.Container) {
	t.Helper()
	if hasIPCLock(c) {
		t.Errorf("%s/%s: container %s has IPC_LOCK, where Pod Security forbids adding it", p.Namespace, p.Name, c.Name)
	}
}

func requireIPCLock(t testing.TB, p *corev1.Pod, c *corev1.Container) {
	t.Helper()
	n := 0
	if c.SecurityContext != nil && c.SecurityContext.Capabilities != nil {
		for _, cap := range c.SecurityContext.Capabilities.Add {
			if cap == "IPC_LOCK" {
				n++
			}
		}
	}
	if n != 1 {
		t.Errorf("%s/%s: IPC_LOCK %d times in container %s's capabilities.add, want once", p.Namespace, p.Name, n, c.Name)
	}
}

// requireShm: exactly one mount at /dev/shm, of a memory-backed emptyDir.
func requireShm(t testing.TB, p *corev1.Pod, c *corev1.Container) {
	t.Helper()
	var mounts []corev1.VolumeMount
	for _, m := range c.VolumeMounts {
		if m.MountPath == "/dev/shm" {
			mounts = append(mounts, m)
		}
	}
	if len(mounts) != 1 {
		t.Errorf("%s/%s: %d mounts at /dev/shm in %s, want 1", p.Namespace, p.Name, len(mounts), c.Name)
		return
	}
	for _, v := range p.Spec.Volumes {
		if v.Name == mounts[0].Name {
			if v.EmptyDir == nil || v.EmptyDir.Medium != corev1.StorageMediumMemory {
				t.Errorf("%s/%s: /dev/shm volume %s is not an emptyDir with medium Memory: %+v", p.Namespace, p.Name, v.Name, v.VolumeSource)
			}
			return
		}
	}
	t.Errorf("%s/%s: /dev/shm mounts volume %q, which the pod lacks", p.Namespace, p.Name, mounts[0].Name)
}

// requireUntouched: a pod the webhook left alone, or that never reached it.
func requireUntouched(t testing.TB, p *corev1.Pod) {
	t.Helper()
	what := p.Namespace + "/" + p.Name
	if v, ok := p.Annotations["rdma-webhook.io/injected"]; ok {
		t.Errorf("%s: annotated rdma-webhook.io/injected=%q, want no mutation", what, v)
	}
	if p.Spec.SchedulerName == "volcano" {
		t.Errorf("%s: schedulerName volcano, want no mutation", what)
	}
	for _, c := range p.Spec.Containers {
		for _, e := range c.Env {
			if strings.HasPrefix(e.Name, "NCCL_IB_HCA") {
				t.Errorf("%s: container %s got %s=%s, want no mutation", what, c.Name, e.Name, e.Value)
			}
		}
	}
}

// requireKept: everything the template declared for container c is still
// there, with the same values (the webhook only adds).
func requireKept(t testing.TB, p *corev1.Pod, declared *corev1.PodSpec, c string) {
	t.Helper()
	what := p.Namespace + "/" + p.Name
	var d *corev1.Container
	for i := range declared.Containers {
		if declared.Containers[i].Name == c {
			d = &declared.Containers[i]
		}
	}
	if d == nil {
		t.Fatalf("the template declares no container %s", c)
	}
	got := container(t, p, c)
	if got.Image != d.Image || fmt.Sprint(got.Command) != fmt.Sprint(d.Command) || fmt.Sprint(got.Args) != fmt.Sprint(d.Args) {
		t.Errorf("%s: image/command/args changed: %q %q %q", what, got.Image, got.Command, got.Args)
	}
	env := envOf(got)
	for _, e := range d.Env {
		if vals := env[e.Name]; len(vals) != 1 || vals[0] != e.Value {
			t.Errorf("%s: declared env %s=%q is now %q", what, e.Name, e.Value, vals)
		}
	}
	for _, m := range d.VolumeMounts {
		found := false
		for _, g := range got.VolumeMounts {
			found = found || (g.Name == m.Name && g.MountPath == m.MountPath)
		}
		if !found {
			t.Errorf("%s: declared mount %s at %s is gone", what, m.Name, m.MountPath)
		}
	}
	for name, q := range d.Resources.Limits {
		if g, ok := got.Resources.Limits[name]; !ok || g.Cmp(q) != 0 {
			t.Errorf("%s: declared limit %s=%v is now %v", what, name, q.String(), g.String())
		}
	}
	for _, v := range declared.Volumes {
		found := false
		for _, g := range p.Spec.Volumes {
			found = found || g.Name == v.Name
		}
		if !found {
			t.Errorf("%s: declared volume %s is gone", what, v.Name)
		}
	}
	if declared.SchedulerName != "" && p.Spec.SchedulerName != declared.SchedulerName {
		t.Errorf("%s: declared schedulerName %q is now %q", what, declared.SchedulerName, p.Spec.SchedulerName)
	}
}
