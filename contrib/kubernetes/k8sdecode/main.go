// Command k8sdecode checks rendered Kubernetes manifests offline, as far
// as the API's Go types can without a cluster: it reads a multi-document
// YAML stream (helm template's output) and decodes every document
// strictly into its k8s.io/api type, so an unknown or misspelt field, a
// wrong type, a bad quantity or a duplicate key fails, then checks what
// the API server would refuse at once (names, labels, a selector that
// does not select the pod template, a mount of no volume, a hostPath
// type). It prints the decoded objects as one JSON array, for the test's
// assertions to read without a YAML parser.
//
// It is a module of its own (contrib/kubernetes/k8sdecode/go.mod) so that
// the daemon's module does not carry the Kubernetes API.
//
// Usage: k8sdecode < rendered.yaml > rendered.json
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

func main() {
	objs, err := decodeAll(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "k8sdecode:", err)
		os.Exit(1)
	}
	out, err := json.Marshal(objs)
	if err != nil {
		fmt.Fprintln(os.Stderr, "k8sdecode:", err)
		os.Exit(1)
	}
	os.Stdout.Write(append(out, '\n'))
}

// decodeAll decodes and checks every document of r; the first problem of
// each document is reported, all documents are looked at.
func decodeAll(r io.Reader) ([]any, error) {
	rd := utilyaml.NewYAMLReader(bufio.NewReader(r))
	var objs []any
	var errs []error
	for i := 1; ; i++ {
		doc, err := rd.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		obj, err := decode(doc)
		if err != nil {
			errs = append(errs, fmt.Errorf("document %d: %w", i, err))
			continue
		}
		if obj != nil {
			objs = append(objs, obj)
		}
	}
	if len(objs) == 0 && len(errs) == 0 {
		errs = append(errs, errors.New("no Kubernetes object in the input"))
	}
	return objs, errors.Join(errs...)
}

// decode is one document as its typed object, nil for a document with
// nothing but comments.
func decode(doc []byte) (any, error) {
	// Strict: a key given twice is an error, as kubectl's strict field
	// validation makes it.
	js, err := yaml.YAMLToJSONStrict(doc)
	if err != nil {
		return nil, err
	}
	if bytes.Equal(bytes.TrimSpace(js), []byte("null")) {
		return nil, nil
	}
	var tm metav1.TypeMeta
	if err := json.Unmarshal(js, &tm); err != nil {
		return nil, err
	}
	var obj any
	var check func() error
	switch tm.APIVersion + " " + tm.Kind {
	case "v1 Namespace":
		o := &corev1.Namespace{}
		obj, check = o, func() error { return checkMeta(o.ObjectMeta, false) }
	case "v1 ConfigMap":
		o := &corev1.ConfigMap{}
		obj, check = o, func() error { return checkConfigMap(o) }
	case "apps/v1 DaemonSet":
		o := &appsv1.DaemonSet{}
		obj, check = o, func() error { return checkDaemonSet(o) }
	case "v1 Service":
		o := &corev1.Service{}
		obj, check = o, func() error { return checkService(o) }
	default:
		return nil, fmt.Errorf("apiVersion %q kind %q: not a kind this chart renders", tm.APIVersion, tm.Kind)
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	if err := dec.Decode(obj); err != nil {
		return nil, fmt.Errorf("%s: %w", tm.Kind, err)
	}
	if err := check(); err != nil {
		return nil, fmt.Errorf("%s: %w", tm.Kind, err)
	}
	return obj, nil
}

// checkMeta is what the API server checks of any object's metadata.
func checkMeta(m metav1.ObjectMeta, namespaced bool) error {
	var errs []string
	errs = append(errs, prefix("name", validation.IsDNS1123Subdomain(m.Name))...)
	if namespaced {
		errs = append(errs, prefix("namespace", validation.IsDNS1123Label(m.Namespace))...)
	}
	errs = append(errs, checkLabels(m.Labels)...)
	for k := range m.Annotations {
		errs = append(errs, prefix("annotation "+k, validation.IsQualifiedName(k))...)
	}
	return joinErrs(errs)
}

func checkLabels(l map[string]string) []string {
	var errs []string
	for k, v := range l {
		errs = append(errs, prefix("label "+k, validation.IsQualifiedName(k))...)
		errs = append(errs, prefix("label "+k+" value", validation.IsValidLabelValue(v))...)
	}
	return errs
}

func checkConfigMap(c *corev1.ConfigMap) error {
	errs := []string{}
	if err := checkMeta(c.ObjectMeta, true); err != nil {
		errs = append(errs, err.Error())
	}
	for k := range c.Data {
		errs = append(errs, prefix("data key "+k, validation.IsConfigMapKey(k))...)
	}
	return joinErrs(errs)
}

// checkDaemonSet holds what apps/v1 validation refuses at once and a
// typed decode lets through.
func checkDaemonSet(d *appsv1.DaemonSet) error {
	errs := []string{}
	if err := checkMeta(d.ObjectMeta, true); err != nil {
		errs = append(errs, err.Error())
	}
	sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	switch {
	case d.Spec.Selector == nil || err != nil || sel.Empty():
		errs = append(errs, fmt.Sprintf("spec.selector: missing or invalid (%v)", err))
	case !sel.Matches(labels.Set(d.Spec.Template.Labels)):
		errs = append(errs, "spec.selector does not select spec.template's labels")
	}
	errs = append(errs, checkLabels(d.Spec.Template.Labels)...)
	if u := d.Spec.UpdateStrategy; u.Type != "" && u.Type != appsv1.RollingUpdateDaemonSetStrategyType && u.Type != appsv1.OnDeleteDaemonSetStrategyType {
		errs = append(errs, "spec.updateStrategy.type: "+string(u.Type))
	}
	p := d.Spec.Template.Spec
	vols := map[string]corev1.Volume{}
	for _, v := range p.Volumes {
		errs = append(errs, prefix("volume "+v.Name, validation.IsDNS1123Label(v.Name))...)
		if _, dup := vols[v.Name]; dup {
			errs = append(errs, "volume "+v.Name+" twice")
		}
		vols[v.Name] = v
		if hp := v.HostPath; hp != nil {
			if !strings.HasPrefix(hp.Path, "/") {
				errs = append(errs, "volume "+v.Name+": hostPath is not absolute")
			}
			if hp.Type != nil && !validHostPathType[*hp.Type] {
				errs = append(errs, "volume "+v.Name+": hostPath type "+string(*hp.Type))
			}
		}
	}
	if len(p.Containers) == 0 {
		errs = append(errs, "no containers")
	}
	all := append(append([]corev1.Container{}, p.InitContainers...), p.Containers...)
	for _, c := range all {
		errs = append(errs, prefix("container "+c.Name, validation.IsDNS1123Label(c.Name))...)
		if c.Image == "" {
			errs = append(errs, "container "+c.Name+": no image")
		}
		for _, m := range c.VolumeMounts {
			v, ok := vols[m.Name]
			if !ok {
				errs = append(errs, "container "+c.Name+": mounts "+m.Name+", which is no volume")
			}
			if !strings.HasPrefix(m.MountPath, "/") {
				errs = append(errs, "container "+c.Name+": mount path "+m.MountPath+" is not absolute")
			}
			// The API server allows propagation other than None only
			// for hostPath volumes, and Bidirectional only privileged.
			if m.MountPropagation != nil && *m.MountPropagation != corev1.MountPropagationNone && (!ok || v.HostPath == nil) {
				errs = append(errs, "container "+c.Name+": mount propagation on "+m.Name+", which is no hostPath")
			}
		}
		for _, pr := range []*corev1.Probe{c.StartupProbe, c.ReadinessProbe, c.LivenessProbe} {
			if pr != nil && pr.Exec == nil && pr.HTTPGet == nil && pr.TCPSocket == nil && pr.GRPC == nil {
				errs = append(errs, "container "+c.Name+": a probe without a handler")
			}
		}
	}
	return joinErrs(errs)
}

var validHostPathType = map[corev1.HostPathType]bool{
	corev1.HostPathUnset: true, corev1.HostPathDirectoryOrCreate: true, corev1.HostPathDirectory: true,
	corev1.HostPathFileOrCreate: true, corev1.HostPathFile: true, corev1.HostPathSocket: true,
	corev1.HostPathCharDev: true, corev1.HostPathBlockDev: true,
}

func prefix(what string, msgs []string) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = what + ": " + m
	}
	return out
}

func joinErrs(errs []string) error {
	if len(errs) == 0 {
		return nil
	}
	return errors.New(strings.Join(errs, "; "))
}

// checkService is what the API server checks of the E2B gateway's
// Service that a chart can get wrong: a DNS-1035 name (a Service's), a
// selector, and named ports.
func checkService(s *corev1.Service) error {
	errs := prefix("name", validation.IsDNS1035Label(s.Name))
	if err := checkMeta(s.ObjectMeta, true); err != nil {
		errs = append(errs, err.Error())
	}
	if len(s.Spec.Selector) == 0 {
		errs = append(errs, "a Service without a selector")
	}
	for _, p := range s.Spec.Ports {
		errs = append(errs, prefix("port "+p.Name, validation.IsValidPortNum(int(p.Port)))...)
		if p.TargetPort.Type == intstr.String {
			errs = append(errs, prefix("targetPort", validation.IsValidPortName(p.TargetPort.StrVal))...)
		}
	}
	if len(errs) > 0 {
		return errors.New(strings.Join(errs, "; "))
	}
	return nil
}
