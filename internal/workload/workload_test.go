package workload

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	podresources "k8s.io/kubelet/pkg/apis/podresources/v1"
)

const (
	uidA = "1f2e3d4c-5b6a-4789-8abc-def012345678"
	cidA = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	cidB = "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210"
	uidB = "aaaabbbb-cccc-4ddd-8eee-ffff00001111"
)

// Cgroup files as the kubelet's two cgroup drivers and the runtimes write them.
var cgroupCases = []struct {
	name, text string
	want       Workload
}{
	{"v2 systemd containerd", "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1f2e3d4c_5b6a_4789_8abc_def012345678.slice/cri-containerd-" + cidA + ".scope\n",
		Workload{PodUID: uidA, ContainerID: cidA}},
	{"v2 systemd guaranteed crio", "0::/kubepods.slice/kubepods-pod1f2e3d4c_5b6a_4789_8abc_def012345678.slice/crio-" + cidA + ".scope\n",
		Workload{PodUID: uidA, ContainerID: cidA}},
	{"v1 cgroupfs docker", "12:pids:/kubepods/besteffort/pod" + uidB + "/" + cidB + "\n11:memory:/kubepods/besteffort/pod" + uidB + "/" + cidB + "\n",
		Workload{PodUID: uidB, ContainerID: cidB}},
	{"v1 containerd systemd colon form", "4:cpu,cpuacct:/system.slice/containerd.service/kubepods-besteffort-pod1f2e3d4c_5b6a_4789_8abc_def012345678.slice:cri-containerd:" + cidA + "\n",
		Workload{PodUID: uidA, ContainerID: cidA}},
	{"pod sandbox level only", "0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" + uidB + ".slice\n",
		Workload{PodUID: uidB}},
	{"host process", "0::/user.slice/user-1000.slice/session-3.scope\n", Workload{}},
	{"docker outside kubernetes", "0::/system.slice/docker-" + cidA + ".scope\n", Workload{}},
	{"garbage", "not a cgroup file", Workload{}},
}

func TestParseCgroup(t *testing.T) {
	for _, tc := range cgroupCases {
		t.Run(tc.name, func(t *testing.T) {
			if got := ParseCgroup(tc.text); got != tc.want {
				t.Errorf("ParseCgroup = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// procFixture writes a /proc root with a cgroup file per pid.
func procFixture(t *testing.T, files map[int]string) string {
	t.Helper()
	root := t.TempDir()
	for pid, text := range files {
		dir := filepath.Join(root, strconv.Itoa(pid))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "cgroup"), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// fakeKubelet is a pod-resources server with a fixed answer; it counts the List calls.
type fakeKubelet struct {
	podresources.UnimplementedPodResourcesListerServer
	resp  *podresources.ListPodResourcesResponse
	calls atomic.Int32
	delay time.Duration
}

func (f *fakeKubelet) List(ctx context.Context, _ *podresources.ListPodResourcesRequest) (*podresources.ListPodResourcesResponse, error) {
	f.calls.Add(1)
	if f.delay > 0 {
		select {
		case <-time.After(f.delay):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return f.resp, nil
}

// serveFake serves f on a unix socket (a short path: sun_path holds 108 bytes).
func serveFake(t *testing.T, f *fakeKubelet) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "pr")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "kubelet.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	podresources.RegisterPodResourcesListerServer(srv, f)
	go srv.Serve(ln)
	t.Cleanup(srv.Stop)
	return sock
}

func gpuContainer(name string, ids ...string) *podresources.ContainerResources {
	return &podresources.ContainerResources{Name: name, Devices: []*podresources.ContainerDevices{
		{ResourceName: "nvidia.com/gpu", DeviceIds: ids},
	}}
}

// TestLookupPodResources: the names come from the container the fake kubelet says holds the
// process's GPU, the ids from the process's cgroup; a GPU shared by two containers
// (time-slicing replicas) and a process outside any pod get no names; the kubelet is asked
// once per Refresh.
func TestLookupPodResources(t *testing.T) {
	const gpu0, gpu1, gpu2 = "GPU-00000000-1111-2222-3333-444444444444", "GPU-11111111-1111-2222-3333-444444444444", "GPU-22222222-1111-2222-3333-444444444444"
	f := &fakeKubelet{resp: &podresources.ListPodResourcesResponse{PodResources: []*podresources.PodResources{
		{Name: "train-0", Namespace: "ml", Containers: []*podresources.ContainerResources{
			gpuContainer("trainer", gpu0), {Name: "sidecar"},
		}},
		{Name: "infer-a", Namespace: "serving", Containers: []*podresources.ContainerResources{gpuContainer("server", gpu1+"::0")}},
		{Name: "infer-b", Namespace: "serving", Containers: []*podresources.ContainerResources{gpuContainer("server", gpu1+"::1")}},
		{Name: "cpu-only", Namespace: "default", Containers: []*podresources.ContainerResources{{Name: "app"}}},
	}}}
	sock := serveFake(t, f)
	root := procFixture(t, map[int]string{
		101: cgroupCases[0].text,
		202: cgroupCases[2].text,
		303: cgroupCases[5].text,
	})
	r := &Resolver{ProcRoot: root, Socket: sock, Refresh: time.Hour}
	defer r.Close()
	for _, tc := range []struct {
		name string
		uuid string
		pid  int
		want Workload
	}{
		{"the GPU's one container", gpu0, 101, Workload{Namespace: "ml", Pod: "train-0", Container: "trainer", PodUID: uidA, ContainerID: cidA}},
		{"a GPU shared by two containers", gpu1, 202, Workload{PodUID: uidB, ContainerID: cidB}},
		{"a GPU no container holds", gpu2, 101, Workload{PodUID: uidA, ContainerID: cidA}},
		{"a host process on a pod's GPU", gpu0, 303, Workload{}},
		{"a process gone", gpu0, 999, Workload{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := r.Lookup(tc.uuid, tc.pid); got != tc.want {
				t.Errorf("Lookup(%s, %d) = %+v, want %+v", tc.uuid, tc.pid, got, tc.want)
			}
		})
	}
	if err := r.Err(); err != nil {
		t.Errorf("Err = %v", err)
	}
	if n := f.calls.Load(); n != 1 {
		t.Errorf("the kubelet was asked %d times, want once within Refresh", n)
	}
}

// TestLookupKubeletFaults: no socket, and a kubelet that does not answer within Timeout,
// leave the names empty (the cgroup's ids stay), say why in Err, and take no longer than
// the timeout.
func TestLookupKubeletFaults(t *testing.T) {
	root := procFixture(t, map[int]string{101: cgroupCases[0].text})
	want := Workload{PodUID: uidA, ContainerID: cidA}

	r := &Resolver{ProcRoot: root, Socket: filepath.Join(t.TempDir(), "absent.sock")}
	if got := r.Lookup("GPU-0", 101); got != want {
		t.Errorf("no socket: %+v, want %+v", got, want)
	}
	if r.Err() == nil {
		t.Error("no socket: Err is nil")
	}

	f := &fakeKubelet{delay: 5 * time.Second, resp: &podresources.ListPodResourcesResponse{}}
	slow := &Resolver{ProcRoot: root, Socket: serveFake(t, f), Timeout: 200 * time.Millisecond}
	defer slow.Close()
	start := time.Now()
	got := slow.Lookup("GPU-0", 101)
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("a kubelet that does not answer held Lookup %s", took)
	}
	if got != want || slow.Err() == nil {
		t.Errorf("slow kubelet: %+v, err %v", got, slow.Err())
	}
}

func FuzzParseCgroup(f *testing.F) {
	for _, tc := range cgroupCases {
		f.Add(tc.text)
	}
	f.Fuzz(func(t *testing.T, s string) {
		w := ParseCgroup(s)
		if w.ContainerID != "" && len(w.ContainerID) != 64 {
			t.Errorf("container id %q", w.ContainerID)
		}
		if w.ContainerID != "" && w.PodUID == "" {
			t.Errorf("a container id without a pod: %+v", w)
		}
	})
}
