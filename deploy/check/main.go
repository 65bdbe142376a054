// Command check is deploy/'s schema check (deploy/ci-check.sh): every object of the Kubernetes
// manifests it is given (deploy/kubernetes/gpuwatt.yaml, `helm template` of deploy/helm/gpuwatt)
// is decoded strictly into the Kubernetes API's own Go types (k8s.io/api; the Prometheus
// Operator's for the ServiceMonitor): an unknown field, a misspelt one or a wrong type fails,
// as kubeconform's strict mode would (its schemas are fetched from GitHub, which CI cannot
// reach). Then the references between them: the DaemonSet's selector matches its pods'
// labels, its probes name a container port, the Service selects the DaemonSet's pods, the
// ServiceMonitor selects the Service and names one of its ports. With -args it prints the
// gpuwatt container's arguments, one per line, for ci-check.sh to run.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

type objects struct {
	daemonSets []*appsv1.DaemonSet
	services   []*corev1.Service
	monitors   []*monitoringv1.ServiceMonitor
	namespaces int
}

func main() {
	printArgs := flag.Bool("args", false, "print the gpuwatt container's arguments, one per line")
	flag.Parse()
	var all objects
	for _, f := range flag.Args() {
		if err := readFile(f, &all); err != nil {
			fmt.Fprintf(os.Stderr, "check: %s: %v\n", f, err)
			os.Exit(1)
		}
	}
	if err := all.references(); err != nil {
		fmt.Fprintf(os.Stderr, "check: %v\n", err)
		os.Exit(1)
	}
	if *printArgs {
		for _, a := range all.daemonSets[0].Spec.Template.Spec.Containers[0].Args {
			fmt.Println(a)
		}
		return
	}
	fmt.Printf("check: ok: %d DaemonSet, %d Service, %d ServiceMonitor, %d Namespace, strictly decoded and cross-referenced\n",
		len(all.daemonSets), len(all.services), len(all.monitors), all.namespaces)
}

// readFile decodes each YAML document of path strictly into its API type.
func readFile(path string, all *objects) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	for i, doc := range bytes.Split(b, []byte("\n---")) {
		if len(bytes.TrimSpace(stripComments(doc))) == 0 {
			continue
		}
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &tm); err != nil {
			return fmt.Errorf("document %d: %v", i+1, err)
		}
		var obj any
		switch tm.APIVersion + " " + tm.Kind {
		case "apps/v1 DaemonSet":
			ds := &appsv1.DaemonSet{}
			all.daemonSets, obj = append(all.daemonSets, ds), ds
		case "v1 Service":
			s := &corev1.Service{}
			all.services, obj = append(all.services, s), s
		case "monitoring.coreos.com/v1 ServiceMonitor":
			m := &monitoringv1.ServiceMonitor{}
			all.monitors, obj = append(all.monitors, m), m
		case "v1 Namespace":
			all.namespaces++
			obj = &corev1.Namespace{}
		default:
			return fmt.Errorf("document %d: %s %s: not a kind this check knows", i+1, tm.APIVersion, tm.Kind)
		}
		// Kubernetes' own strict decoding: unknown and duplicate fields are errors, and field
		// names are case-sensitive (encoding/json's would take hostPid for hostPID).
		j, err := yaml.YAMLToJSONStrict(doc)
		if err != nil {
			return fmt.Errorf("document %d (%s): %v", i+1, tm.Kind, err)
		}
		strict, err := kjson.UnmarshalStrict(j, obj)
		if err == nil && len(strict) > 0 {
			err = errors.Join(strict...)
		}
		if err != nil {
			return fmt.Errorf("document %d (%s): %v", i+1, tm.Kind, err)
		}
	}
	return nil
}

func stripComments(doc []byte) []byte {
	var out []byte
	for _, l := range bytes.Split(doc, []byte("\n")) {
		if t := bytes.TrimSpace(l); len(t) > 0 && t[0] != '#' {
			out = append(out, l...)
			out = append(out, '\n')
		}
	}
	return out
}

// references checks what the objects say of each other.
func (all *objects) references() error {
	if len(all.daemonSets) != 1 || len(all.services) != 1 {
		return fmt.Errorf("want one DaemonSet and one Service, have %d and %d", len(all.daemonSets), len(all.services))
	}
	ds, svc := all.daemonSets[0], all.services[0]
	if ds.Spec.Selector == nil {
		return errors.New("DaemonSet: no selector")
	}
	sel, err := metav1.LabelSelectorAsSelector(ds.Spec.Selector)
	if err != nil {
		return fmt.Errorf("DaemonSet selector: %v", err)
	}
	podLabels := labels.Set(ds.Spec.Template.Labels)
	if sel.Empty() || !sel.Matches(podLabels) {
		return fmt.Errorf("DaemonSet %s: selector %s does not match its pods' labels %v", ds.Name, sel, podLabels)
	}
	cs := ds.Spec.Template.Spec.Containers
	if len(cs) != 1 || cs[0].Image == "" || len(cs[0].Args) == 0 || cs[0].Args[0] != "serve" {
		return fmt.Errorf("DaemonSet %s: want one container with an image running `gpuwatt serve`", ds.Name)
	}
	ports := map[string]int32{}
	for _, p := range cs[0].Ports {
		ports[p.Name] = p.ContainerPort
	}
	for what, pr := range map[string]*corev1.Probe{"readiness": cs[0].ReadinessProbe, "liveness": cs[0].LivenessProbe} {
		if pr == nil {
			return fmt.Errorf("DaemonSet %s: no %s probe", ds.Name, what)
		}
		port := ""
		switch {
		case pr.HTTPGet != nil:
			port = pr.HTTPGet.Port.String()
		case pr.TCPSocket != nil:
			port = pr.TCPSocket.Port.String()
		}
		if _, ok := ports[port]; !ok {
			return fmt.Errorf("DaemonSet %s: the %s probe's port %q is none of the container's", ds.Name, what, port)
		}
	}
	if hg := cs[0].ReadinessProbe.HTTPGet; hg == nil || hg.Path != "/health" {
		return fmt.Errorf("DaemonSet %s: the readiness probe is not GET /health", ds.Name)
	}
	listen := ""
	for _, a := range cs[0].Args {
		if v, ok := strings.CutPrefix(a, "--listen=:"); ok {
			listen = v
		}
	}
	if fmt.Sprint(ports["metrics"]) != listen {
		return fmt.Errorf("DaemonSet %s: --listen=:%s but the metrics port is %d", ds.Name, listen, ports["metrics"])
	}
	mounts := map[string]bool{}
	for _, v := range ds.Spec.Template.Spec.Volumes {
		mounts[v.Name] = true
	}
	for _, m := range cs[0].VolumeMounts {
		if !mounts[m.Name] {
			return fmt.Errorf("DaemonSet %s: mount %s has no volume", ds.Name, m.Name)
		}
	}
	if !labels.SelectorFromSet(svc.Spec.Selector).Matches(podLabels) || len(svc.Spec.Selector) == 0 {
		return fmt.Errorf("Service %s: selector %v does not select the DaemonSet's pods %v", svc.Name, svc.Spec.Selector, podLabels)
	}
	svcPorts := map[string]bool{}
	for _, p := range svc.Spec.Ports {
		svcPorts[p.Name] = true
		if _, ok := ports[p.TargetPort.String()]; !ok {
			return fmt.Errorf("Service %s: targetPort %s is none of the container's", svc.Name, p.TargetPort.String())
		}
	}
	for _, m := range all.monitors {
		ms, err := metav1.LabelSelectorAsSelector(&m.Spec.Selector)
		if err != nil || ms.Empty() || !ms.Matches(labels.Set(svc.Labels)) {
			return fmt.Errorf("ServiceMonitor %s: selector %v does not select Service %s (labels %v)", m.Name, m.Spec.Selector, svc.Name, svc.Labels)
		}
		for _, e := range m.Spec.Endpoints {
			if !svcPorts[e.Port] {
				return fmt.Errorf("ServiceMonitor %s: endpoint port %q is none of the Service's", m.Name, e.Port)
			}
		}
	}
	return nil
}
