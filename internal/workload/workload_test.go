package workload

import (
	"encoding/binary"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
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

// fakeKubelet is a pod-resources server with a fixed answer, as the kubelet serves it:
// gRPC over HTTP/2 without TLS on a unix socket, here net/http's own; it counts the List
// calls.
type fakeKubelet struct {
	pods  []fakePod
	calls atomic.Int32
	delay time.Duration
	// answer, where set, writes the whole answer in place of the pods (a fault).
	answer func(w http.ResponseWriter)
}

type fakePod struct {
	name, namespace string
	containers      []fakeContainer
}

type fakeContainer struct {
	name string
	gpus []string // nvidia.com/gpu device ids
}

func (f *fakeKubelet) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/grpc")
	w.Header().Set("Trailer", "Grpc-Status, Grpc-Message")
	if r.URL.Path != "/v1.PodResourcesLister/List" || r.ProtoMajor != 2 || r.Header.Get("Content-Type") != "application/grpc" {
		w.Header().Set("Grpc-Status", "12") // Unimplemented
		return
	}
	// The request: an empty ListPodResourcesRequest, the 5-byte prefix alone.
	req, err := io.ReadAll(io.LimitReader(r.Body, 1024))
	if err != nil || len(req) != 5 || binary.BigEndian.Uint32(req[1:]) != 0 {
		w.Header().Set("Grpc-Status", "3") // InvalidArgument
		return
	}
	f.calls.Add(1)
	if f.delay > 0 {
		select {
		case <-time.After(f.delay):
		case <-r.Context().Done():
			return
		}
	}
	if f.answer != nil {
		f.answer(w)
		return
	}
	w.Write(grpcFrame(encodeList(f.pods)))
	w.Header().Set("Grpc-Status", "0")
}

func grpcFrame(msg []byte) []byte {
	b := make([]byte, 5, 5+len(msg))
	binary.BigEndian.PutUint32(b[1:], uint32(len(msg)))
	return append(b, msg...)
}

// encodeList is the ListPodResourcesResponse of pods (api.proto's field numbers).
func encodeList(pods []fakePod) []byte {
	msg := func(b []byte, num protowire.Number, m []byte) []byte {
		return protowire.AppendBytes(protowire.AppendTag(b, num, protowire.BytesType), m)
	}
	str := func(b []byte, num protowire.Number, s string) []byte {
		return protowire.AppendString(protowire.AppendTag(b, num, protowire.BytesType), s)
	}
	var out []byte
	for _, p := range pods {
		pb := str(str(nil, 1, p.name), 2, p.namespace)
		for _, c := range p.containers {
			cb := str(nil, 1, c.name)
			if len(c.gpus) > 0 {
				db := str(nil, 1, "nvidia.com/gpu")
				for _, id := range c.gpus {
					db = str(db, 2, id)
				}
				cb = msg(cb, 2, db)
			}
			pb = msg(pb, 3, cb)
		}
		out = msg(out, 1, pb)
	}
	return out
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
	srv := &http.Server{Handler: f, Protocols: new(http.Protocols), ReadHeaderTimeout: 5 * time.Second}
	srv.Protocols.SetUnencryptedHTTP2(true)
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return sock
}

// TestLookupPodResources: the names come from the container the fake kubelet says holds the
// process's GPU, the ids from the process's cgroup; a GPU shared by two containers
// (time-slicing replicas) and a process outside any pod get no names; the kubelet is asked
// once per Refresh.
func TestLookupPodResources(t *testing.T) {
	const gpu0, gpu1, gpu2 = "GPU-00000000-1111-2222-3333-444444444444", "GPU-11111111-1111-2222-3333-444444444444", "GPU-22222222-1111-2222-3333-444444444444"
	f := &fakeKubelet{pods: []fakePod{
		{"train-0", "ml", []fakeContainer{{"trainer", []string{gpu0}}, {name: "sidecar"}}},
		{"infer-a", "serving", []fakeContainer{{"server", []string{gpu1 + "::0"}}}},
		{"infer-b", "serving", []fakeContainer{{"server", []string{gpu1 + "::1"}}}},
		{"cpu-only", "default", []fakeContainer{{name: "app"}}},
	}}
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

	f := &fakeKubelet{delay: 5 * time.Second}
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

// TestDecodeListGolden: a ListPodResourcesResponse written by k8s.io/kubelet v0.37.2's own
// generated types (testdata/list-k8s-v0.37.2.txt is its text), with every field api.proto
// has (CPUs, memory, NUMA topology, dynamic resources), decodes to its pods, containers and
// devices; the fields not read are skipped.
func TestDecodeListGolden(t *testing.T) {
	b, err := os.ReadFile("testdata/list-k8s-v0.37.2.pb")
	if err != nil {
		t.Fatal(err)
	}
	pods, err := decodeList(b)
	if err != nil {
		t.Fatal(err)
	}
	want := []podResources{
		{"train-0", "ml", []containerResources{
			{"trainer", []containerDevices{
				{"nvidia.com/gpu", []string{"GPU-00000000-1111-2222-3333-444444444444", "GPU-33333333-1111-2222-3333-444444444444"}},
				{"example.com/nic", []string{"nic-0"}},
			}},
			{name: "sidecar"},
		}},
		{"infer-a", "serving", []containerResources{{"server", []containerDevices{{"nvidia.com/gpu", []string{"GPU-11111111-1111-2222-3333-444444444444::0"}}}}}},
		{"infer-b", "serving", []containerResources{{"server", []containerDevices{{"nvidia.com/gpu", []string{"GPU-11111111-1111-2222-3333-444444444444::1"}}}}}},
		{"cpu-only", "default", []containerResources{{name: "app"}}},
	}
	if !reflect.DeepEqual(pods, want) {
		t.Errorf("decoded\n%+v\nwant\n%+v", pods, want)
	}
	if _, err := decodeList(b[:len(b)-3]); err == nil {
		t.Error("a truncated answer decoded")
	}
}

// TestListFaults: answers that are not a good unary gRPC answer are errors that say why,
// and leave the names empty: a gRPC error status (its message percent-decoded), a status
// in the headers alone, no status at all, a message over 16 MiB (refused from its prefix,
// unread), a compressed one, two messages, and a server that is not the pod-resources API.
func TestListFaults(t *testing.T) {
	root := procFixture(t, map[int]string{101: cgroupCases[0].text})
	frame := grpcFrame(encodeList([]fakePod{{"p", "n", []fakeContainer{{"c", []string{"GPU-0"}}}}}))
	for _, tc := range []struct {
		name   string
		answer func(w http.ResponseWriter)
		want   string
	}{
		{"error status", func(w http.ResponseWriter) {
			w.Header().Set("Grpc-Status", "7")
			w.Header().Set("Grpc-Message", "not allowed: 100%25")
		}, "code = PermissionDenied desc = not allowed: 100%"},
		{"trailers only", func(w http.ResponseWriter) {
			w.Header().Set("Grpc-Status", "14")
			w.WriteHeader(http.StatusOK)
		}, "code = Unavailable"},
		{"no status", func(w http.ResponseWriter) { w.Write(frame) }, "no grpc-status"},
		{"too large", func(w http.ResponseWriter) {
			w.Write([]byte{0, 1, 0, 0, 1})
			w.Header().Set("Grpc-Status", "0")
		}, "more than the 16777216 allowed"},
		{"compressed", func(w http.ResponseWriter) {
			f := append([]byte(nil), frame...)
			f[0] = 1
			w.Write(f)
			w.Header().Set("Grpc-Status", "0")
		}, "compressed"},
		{"two messages", func(w http.ResponseWriter) {
			w.Write(frame)
			w.Write(frame)
			w.Header().Set("Grpc-Status", "0")
		}, "more than one message"},
		{"not grpc", func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "text/plain")
			w.WriteHeader(http.StatusNotFound)
		}, "404"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeKubelet{answer: tc.answer}
			r := &Resolver{ProcRoot: root, Socket: serveFake(t, f)}
			defer r.Close()
			got := r.Lookup("GPU-0", 101)
			if got.Pod != "" || got.PodUID != uidA {
				t.Errorf("Lookup = %+v", got)
			}
			if err := r.Err(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Err = %v, want it to say %q", err, tc.want)
			}
		})
	}
	// The same answer well formed names the pod.
	f := &fakeKubelet{answer: func(w http.ResponseWriter) { w.Write(frame); w.Header().Set("Grpc-Status", "0") }}
	r := &Resolver{ProcRoot: root, Socket: serveFake(t, f)}
	defer r.Close()
	if got := r.Lookup("GPU-0", 101); got.Pod != "p" || got.Namespace != "n" || got.Container != "c" || r.Err() != nil {
		t.Errorf("well formed: %+v, %v", got, r.Err())
	}
}

func FuzzDecodeList(f *testing.F) {
	if b, err := os.ReadFile("testdata/list-k8s-v0.37.2.pb"); err == nil {
		f.Add(b)
	}
	f.Add(encodeList([]fakePod{{"p", "n", []fakeContainer{{"c", []string{"GPU-0"}}}}}))
	f.Fuzz(func(t *testing.T, b []byte) {
		pods, err := decodeList(b)
		if err != nil && pods != nil {
			t.Errorf("pods %+v with error %v", pods, err)
		}
	})
}
