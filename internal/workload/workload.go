// Package workload says which Kubernetes pod and container a GPU process belongs to, for
// serve's per-process energy: the pod's UID and the container's id from the process's cgroup
// path (/proc/PID/cgroup, under an injected root), and the names of the namespace, pod and
// container from the kubelet's pod-resources API (a gRPC service on a unix socket that says
// which container was given which device; podresources.go calls it over net/http's HTTP/2).
package workload

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

// DefaultSocket is where the kubelet serves its pod-resources API.
const DefaultSocket = "/var/lib/kubelet/pod-resources/kubelet.sock"

// Workload is what is known of the pod and container a process runs in; empty fields are
// unknown (a process outside Kubernetes has none).
type Workload struct {
	Namespace, Pod, Container string // names, from the pod-resources API
	PodUID, ContainerID       string // from the process's cgroup path
}

// Resolver answers Lookup. The zero value reads /proc and asks no kubelet.
type Resolver struct {
	// ProcRoot is the proc file system the processes' cgroup files are read from; "/proc"
	// when empty.
	ProcRoot string
	// Socket is the kubelet's pod-resources socket; empty: names are not asked for. A
	// socket that is not there leaves the names empty (a node without a kubelet).
	Socket string
	// Refresh is how long one answer of the kubelet is used; 10 s when 0.
	Refresh time.Duration
	// Timeout bounds one call to the kubelet; 1 s when 0.
	Timeout time.Duration

	mu        sync.Mutex
	client    *http.Client       // HTTP/2 to Socket (podresources.go)
	transport *http.Transport    // its connections, closed by Close
	owners    map[string][]owner // device id -> the containers given it
	listedAt  time.Time
	err       error
}

type owner struct{ namespace, pod, container string }

// Lookup returns what is known of the workload of process pid, which uses the GPU of
// gpuUUID. The names come from the container the kubelet gave that GPU to, and only where
// the process runs in a pod (its cgroup path says so) and exactly one container was given
// the GPU: with a GPU shared between containers (time-slicing) the names are not known.
func (r *Resolver) Lookup(gpuUUID string, pid int) Workload {
	w := CgroupWorkload(r.procRoot(), pid)
	if w.PodUID == "" || r.Socket == "" || gpuUUID == "" {
		return w
	}
	owners := r.devices()
	var found []owner
	for id, held := range owners {
		if id == gpuUUID || strings.HasPrefix(id, gpuUUID+"::") {
			for _, o := range held {
				if !containsOwner(found, o) {
					found = append(found, o)
				}
			}
		}
	}
	if len(found) == 1 {
		w.Namespace, w.Pod, w.Container = found[0].namespace, found[0].pod, found[0].container
	}
	return w
}

// Err is the error of the last call to the kubelet (nil: it answered, or none was made).
func (r *Resolver) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

// Close closes the connection to the kubelet.
func (r *Resolver) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.transport != nil {
		r.transport.CloseIdleConnections()
		r.client, r.transport = nil, nil
	}
	return nil
}

func containsOwner(list []owner, o owner) bool {
	for _, x := range list {
		if x == o {
			return true
		}
	}
	return false
}

func (r *Resolver) procRoot() string {
	if r.ProcRoot == "" {
		return "/proc"
	}
	return r.ProcRoot
}

// devices returns the kubelet's device assignments, asked at most every Refresh.
func (r *Resolver) devices() map[string][]owner {
	r.mu.Lock()
	defer r.mu.Unlock()
	refresh := r.Refresh
	if refresh <= 0 {
		refresh = 10 * time.Second
	}
	if !r.listedAt.IsZero() && time.Since(r.listedAt) < refresh {
		return r.owners
	}
	r.listedAt = time.Now()
	owners, err := r.list()
	r.err = err
	if err == nil {
		r.owners = owners
	}
	return r.owners
}

// list asks the kubelet which devices each container was given (under r.mu).
func (r *Resolver) list() (map[string][]owner, error) {
	if _, err := os.Stat(r.Socket); err != nil {
		return nil, fmt.Errorf("pod-resources socket: %w", err)
	}
	if r.client == nil {
		r.client, r.transport = newPodResourcesClient(r.Socket)
	}
	timeout := r.Timeout
	if timeout <= 0 {
		timeout = time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	pods, err := listPodResources(ctx, r.client)
	if err != nil {
		return nil, fmt.Errorf("pod-resources List on %s: %w", r.Socket, err)
	}
	owners := map[string][]owner{}
	for _, p := range pods {
		for _, c := range p.containers {
			o := owner{p.namespace, p.name, c.name}
			for _, d := range c.devices {
				for _, id := range d.ids {
					owners[id] = append(owners[id], o)
				}
			}
		}
	}
	return owners, nil
}

// maxCgroupFile bounds the read of /proc/PID/cgroup (a few hundred bytes in practice).
const maxCgroupFile = 64 << 10

// CgroupWorkload reads the pod UID and container id from the cgroup file of pid under
// procRoot; empty where the process is gone, or not in a Kubernetes pod.
func CgroupWorkload(procRoot string, pid int) Workload {
	f, err := os.Open(filepath.Join(procRoot, strconv.Itoa(pid), "cgroup"))
	if err != nil {
		return Workload{}
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxCgroupFile))
	if err != nil {
		return Workload{}
	}
	return ParseCgroup(string(b))
}

// podUID matches a pod's UID in a cgroup path: "pod" then the UID, its dashes written as
// underscores under the systemd cgroup driver.
var podUID = regexp.MustCompile(`pod([0-9a-f]{8}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{12})`)

// containerID matches a container's id (64 hex digits) at the end of a cgroup path's last
// element, after the runtime's prefix ("cri-containerd-", "crio-", "docker-", or
// containerd's "kubepods-…slice:cri-containerd:") and before ".scope".
var containerID = regexp.MustCompile(`(?:^|[-:])([0-9a-f]{64})(?:\.scope)?$`)

// ParseCgroup reads the pod UID and container id from the text of a /proc/PID/cgroup file
// (cgroup v1 or v2; the cgroupfs or systemd driver of the kubelet).
func ParseCgroup(text string) Workload {
	for _, line := range strings.Split(text, "\n") {
		// hierarchy-ID:controllers:path; the path may itself hold colons.
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 || !strings.Contains(parts[2], "kubepods") {
			continue
		}
		path := parts[2]
		m := podUID.FindStringSubmatch(path)
		if m == nil {
			continue
		}
		w := Workload{PodUID: strings.ReplaceAll(m[1], "_", "-")}
		last := path[strings.LastIndex(path, "/")+1:]
		if c := containerID.FindStringSubmatch(last); c != nil {
			w.ContainerID = c[1]
		}
		return w
	}
	return Workload{}
}
