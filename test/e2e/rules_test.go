package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	jsonpatch "github.com/evanphx/json-patch/v5"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubebridge/kubebridge/internal/replay"
	"github.com/kubebridge/kubebridge/pkg/contract"
)

// heartbeat is the annotation the workload renews as controllers and
// agents do; both types ignore it.
const heartbeat = "example.com/heartbeat"

// rulesConfig is the configuration file of TestRules: Pods published
// while labelled tier=frontend, without status or heartbeat, updates as a
// patch alone; ConfigMaps without heartbeat, updates only when data or
// labels change, with the old object and a patch.
const rulesConfig = `apiVersion: kubebridge.io/v1alpha1
kind: BridgeConfiguration
resources:
- resource: pods
  match: "object.metadata.labels['tier'] == 'frontend'"
  ignoreFields:
  - [status]
  - [metadata, annotations, "example.com/heartbeat"]
  patch: true
  oldObject: false
- resource: configmaps
  ignoreFields:
  - [metadata, annotations, "example.com/heartbeat"]
  when: "object.data != oldObject.data || object.metadata.labels != oldObject.metadata.labels"
  patch: true
`

// TestRules runs the rules of rulesConfig on Pods and ConfigMaps that
// behave like a cluster's: status and heartbeat churn all along, and now
// and then a label, spec or data change, or an annotation `when` ignores.
// Every meaningful change reaches the stream and no other does; a Pod
// leaving match arrives as a delete and one entering it as an add; every
// patch turns the previous published object into the new one; no
// published object holds an ignored field; and the last message per
// subject equals the projected, matched list, at the end (up to what the
// rules hold back) and exactly after a restart.
func TestRules(t *testing.T) {
	h := newHarness(t)
	w := newRulesWorkload(h)
	w.createAll()
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	must(t, os.WriteFile(cfg, []byte(rulesConfig), 0o600))
	b := h.startBridge(map[string]string{"BRIDGE_CONFIG": cfg})
	podType, cmType := h.typeSubject("", "v1", "pods"), h.cmType()
	// The JS example follows the Pods live, checking each patch against
	// the object it holds.
	node, npm := jsTools(t)
	jsDir := jsInstall(t, npm)
	live := jsStart(t, node, jsDir, podType, h.natsURL, h.stream)
	live.waitLine(t, "the synced line", regexp.MustCompile(`^synced \d+ objects$`))

	for round := 0; round < 3; round++ {
		w.noise()
		// A spec change of a Pod in scope, a label change of one, then one
		// leaving match and one entering it.
		w.meaningful(podType, "p0", contract.TypeUpdated, func(p *corev1.Pod) { p.Spec.Containers[0].Image = fmt.Sprintf("registry.example.com/app:%d", round+2) })
		w.meaningful(podType, "p2", contract.TypeUpdated, func(p *corev1.Pod) { p.Labels["version"] = fmt.Sprint(round) })
		w.noise()
		leaving, entering := w.swapTier(round)
		w.meaningful(podType, leaving, contract.TypeDeleted, func(p *corev1.Pod) { p.Labels["tier"] = "backend" })
		w.meaningful(podType, entering, contract.TypeAdded, func(p *corev1.Pod) { p.Labels["tier"] = "frontend" })
		w.noise()
		w.meaningfulCM(cmType, "c0", func(cm *corev1.ConfigMap) { cm.Data["round"] = fmt.Sprint(round) })
		w.withheldCM("c1", func(cm *corev1.ConfigMap) { cm.Annotations["note"] = fmt.Sprint(round) })
		w.meaningfulCM(cmType, "c1", func(cm *corev1.ConfigMap) { cm.Labels["round"] = fmt.Sprint(round) })
		w.withheldCM("c2", func(cm *corev1.ConfigMap) { cm.Annotations["note"] = fmt.Sprint(round) })
	}
	w.noise()
	// The last noise must have reached the bridge before the stream is
	// read for what it did not publish: a marker change after it, on the
	// same watch, is published only after the noise was handled.
	w.meaningfulCM(cmType, "c3", func(cm *corev1.ConfigMap) { cm.Data["done"] = "yes" })

	msgs := h.mustRead()
	defer logOnFailure(t, msgs)
	checkJSPatches(t, live, podType, msgs)
	w.checkPublished(msgs, podType, cmType)
	checkPatches(t, msgs, podType, false)
	checkPatches(t, msgs, cmType, true)
	checkProjected(t, msgs)
	// At the end: the Pods as listed, projected and matched, up to the
	// resourceVersion that ignored changes moved; the ConfigMaps also up
	// to the note annotation `when` holds back.
	checkLastEqualsList(t, msgs, podType, w.listPods(), "resourceVersion")
	checkLastEqualsList(t, msgs, cmType, w.listCMs(), "resourceVersion", "note")
	t.Logf("%d messages; %d pod and %d configmap changes made, %d of them meaningful", len(msgs), w.podChanges, w.cmChanges, len(w.want))

	// After a restart, the start-up snapshot brings every held-back change
	// up to date: exactly the list.
	b.stop()
	h.startBridge(map[string]string{"BRIDGE_CONFIG": cfg})
	msgs = h.mustRead()
	checkLastEqualsList(t, msgs, podType, w.listPods())
	checkLastEqualsList(t, msgs, cmType, w.listCMs())
	checkReadersAgree(t, h, msgs, podType, w.listPods(), node, jsDir)
}

// checkJSPatches checks that the JS example applied every Pod update's
// patch to the object it held and got the published object: it printed
// patch=N on each update and no patch-mismatch line.
func checkJSPatches(t *testing.T, js *jsProc, typ string, msgs []replay.Message) {
	t.Helper()
	last := ofType(onSubjectPrefix(msgs, typ+"."), contract.TypeUpdated, "")
	if len(last) == 0 {
		t.Fatal("no update of a Pod in the stream")
	}
	m := last[len(last)-1]
	js.waitLine(t, "the last Pod update", regexp.MustCompile(`^updated `+regexp.QuoteMeta(m.Ext(contract.ExtNamespace)+"/"+m.Ext(contract.ExtName))+` rv=`+m.Ext(contract.ExtResourceVersion)+`\b`))
	patched := 0
	for _, l := range js.lines() {
		if strings.HasPrefix(l, "patch-mismatch") {
			t.Errorf("the JS example: %s", l)
		}
		if strings.HasPrefix(l, "updated ") && strings.Contains(l, " patch=") {
			patched++
		}
	}
	if patched != len(last) {
		t.Errorf("the JS example printed %d updates with a patch; the stream holds %d Pod updates\n%s", patched, len(last), js.output())
	}
}

// onSubjectPrefix is the messages whose subject starts with prefix.
func onSubjectPrefix(msgs []replay.Message, prefix string) []replay.Message {
	var out []replay.Message
	for _, m := range msgs {
		if strings.HasPrefix(m.Subject, prefix) {
			out = append(out, m)
		}
	}
	return out
}

// checkReadersAgree checks that internal/replay and examples/js, both
// written from the contract alone, rebuild typ's state from the stream as
// the list in scope (want, by subject) has it: the same objects at the
// same resourceVersions.
func checkReadersAgree(t *testing.T, h *harness, msgs []replay.Message, typ string, want map[string]map[string]any, node, jsDir string) {
	t.Helper()
	listed := map[string]string{}
	for subject, obj := range want {
		listed[strings.TrimPrefix(subject, typ+".")] = obj["metadata"].(map[string]any)["resourceVersion"].(string)
	}
	st, err := h.tryApply(msgs)
	if err != nil {
		t.Fatalf("replaying the stream: %v", err)
	}
	replayed := map[string]string{}
	for subject, rv := range stateOf(st, typ) {
		replayed[strings.TrimPrefix(subject, typ+".")] = rv
	}
	if d := diffState(replayed, listed); d != "" {
		t.Errorf("internal/replay's state of %s differs from the list in scope: %s", typ, d)
	}
	if st.Patches == 0 || len(st.PatchMismatches) > 0 {
		t.Errorf("internal/replay checked %d patches; mismatches: %q", st.Patches, st.PatchMismatches)
	}
	js := jsStart(t, node, jsDir, typ, h.natsURL, h.stream)
	synced := js.waitLine(t, "the state and the synced line", regexp.MustCompile(`^synced \d+ objects$`))
	fromJS := map[string]string{}
	for subject, rv := range js.state(h, synced) {
		fromJS[strings.TrimPrefix(subject, h.cmType()+".")] = rv
	}
	if d := diffState(fromJS, replayed); d != "" {
		t.Errorf("examples/js and internal/replay disagree on %s: %s\n%s", typ, d, js.output())
	}
}

// rulesWorkload makes the changes of TestRules and remembers the meaningful
// ones: what the stream must hold, by subject and resourceVersion.
type rulesWorkload struct {
	h                     *harness
	frontend              map[string]bool
	want                  map[string]string // subject/resourceVersion → event type
	podChanges, cmChanges int
}

func newRulesWorkload(h *harness) *rulesWorkload {
	return &rulesWorkload{h: h, frontend: map[string]bool{}, want: map[string]string{}}
}

func (w *rulesWorkload) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 30*time.Second)
}

// createAll creates six Pods (p0-p3 tier=frontend) and four ConfigMaps.
func (w *rulesWorkload) createAll() {
	h := w.h
	ctx, cancel := w.ctx()
	defer cancel()
	// No controller creates the default service account, which admission
	// requires of a Pod.
	_, err := h.cs.CoreV1().ServiceAccounts(h.ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{})
	must(h.t, err)
	for i := 0; i < 6; i++ {
		tier := "frontend"
		if i >= 4 {
			tier = "backend"
		}
		name := fmt.Sprintf("p%d", i)
		w.frontend[name] = tier == "frontend"
		_, err := h.cs.CoreV1().Pods(h.ns).Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"tier": tier}, Annotations: map[string]string{heartbeat: "0"}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.example.com/app:1"}}},
		}, metav1.CreateOptions{})
		must(h.t, err)
	}
	for i := 0; i < 4; i++ {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("c%d", i), Labels: map[string]string{"app": "web"},
			Annotations: map[string]string{heartbeat: "0", "note": "-"}}, Data: map[string]string{"k": "v"}}
		_, err := h.cs.CoreV1().ConfigMaps(h.ns).Create(ctx, cm, metav1.CreateOptions{})
		must(h.t, err)
	}
}

// noise renews every object's heartbeat and rewrites every Pod's status
// as a kubelet does: conditions, probe times, restart counts.
func (w *rulesWorkload) noise() {
	h := w.h
	ctx, cancel := w.ctx()
	defer cancel()
	now := metav1.NewTime(time.Now().Truncate(time.Second))
	pods, err := h.cs.CoreV1().Pods(h.ns).List(ctx, metav1.ListOptions{})
	must(h.t, err)
	for i := range pods.Items {
		p := &pods.Items[i]
		p.Status.Phase = corev1.PodRunning
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastProbeTime: now, LastTransitionTime: now}}
		restarts := int32(0)
		if len(p.Status.ContainerStatuses) > 0 {
			restarts = p.Status.ContainerStatuses[0].RestartCount + 1
		}
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", Image: p.Spec.Containers[0].Image, Ready: true, RestartCount: restarts}}
		p, err = h.cs.CoreV1().Pods(h.ns).UpdateStatus(ctx, p, metav1.UpdateOptions{})
		must(h.t, err)
		p.Annotations[heartbeat] = now.String() + fmt.Sprint(restarts)
		_, err = h.cs.CoreV1().Pods(h.ns).Update(ctx, p, metav1.UpdateOptions{})
		must(h.t, err)
		w.podChanges += 2
	}
	cms, err := h.cs.CoreV1().ConfigMaps(h.ns).List(ctx, metav1.ListOptions{})
	must(h.t, err)
	for i := range cms.Items {
		cm := &cms.Items[i]
		cm.Annotations[heartbeat] = fmt.Sprint(time.Now().UnixNano())
		_, err = h.cs.CoreV1().ConfigMaps(h.ns).Update(ctx, cm, metav1.UpdateOptions{})
		must(h.t, err)
		w.cmChanges++
	}
}

// swapTier picks, for a round, a Pod in scope to leave it and one out of
// scope to enter it.
func (w *rulesWorkload) swapTier(round int) (leaving, entering string) {
	leaving, entering = fmt.Sprintf("p%d", 1+round%2*2), "p4"
	if round%2 == 1 {
		entering = "p5"
	}
	if !w.frontend[leaving] || w.frontend[entering] {
		for name, in := range w.frontend {
			if in && name != "p0" && name != "p2" {
				leaving = name
			}
		}
		for name, in := range w.frontend {
			if !in {
				entering = name
			}
		}
	}
	w.frontend[leaving], w.frontend[entering] = false, true
	return leaving, entering
}

// meaningful changes Pod name with edit, and waits for its event.
func (w *rulesWorkload) meaningful(podType, name, ceType string, edit func(*corev1.Pod)) {
	h := w.h
	ctx, cancel := w.ctx()
	defer cancel()
	p, err := h.cs.CoreV1().Pods(h.ns).Get(ctx, name, metav1.GetOptions{})
	must(h.t, err)
	edit(p)
	p, err = h.cs.CoreV1().Pods(h.ns).Update(ctx, p, metav1.UpdateOptions{})
	must(h.t, err)
	w.podChanges++
	subject := podType + "." + h.ns + "." + name
	w.want[subject+"/"+p.ResourceVersion] = ceType
	h.waitEvent(subject, ceType, p.ResourceVersion)
}

// meaningfulCM changes ConfigMap name's data or labels, and waits for its
// update.
func (w *rulesWorkload) meaningfulCM(cmType, name string, edit func(*corev1.ConfigMap)) {
	h := w.h
	cm := w.editCM(name, edit)
	subject := cmType + "." + h.ns + "." + name
	w.want[subject+"/"+cm.ResourceVersion] = contract.TypeUpdated
	h.waitEvent(subject, contract.TypeUpdated, cm.ResourceVersion)
}

// withheldCM makes a change the ConfigMaps' `when` holds back.
func (w *rulesWorkload) withheldCM(name string, edit func(*corev1.ConfigMap)) {
	w.editCM(name, edit)
}

func (w *rulesWorkload) editCM(name string, edit func(*corev1.ConfigMap)) *corev1.ConfigMap {
	h := w.h
	ctx, cancel := w.ctx()
	defer cancel()
	cm, err := h.cs.CoreV1().ConfigMaps(h.ns).Get(ctx, name, metav1.GetOptions{})
	must(h.t, err)
	edit(cm)
	w.cmChanges++
	return h.updateCM(cm)
}

// checkPublished checks that the live events in msgs are exactly the
// meaningful changes (by subject, resourceVersion and type), and the
// creations of the objects in scope.
func (w *rulesWorkload) checkPublished(msgs []replay.Message, podType, cmType string) {
	t := w.h.t
	seen := map[string]bool{}
	for _, m := range liveEvents(msgs) {
		key := m.Subject + "/" + m.Ext(contract.ExtResourceVersion)
		want, ok := w.want[key]
		if !ok {
			t.Errorf("seq %d: %s on %s at rv %s is no meaningful change: a change the rules should have held back was published", m.Seq, m.Event.Type(), m.Subject, m.Ext(contract.ExtResourceVersion))
			continue
		}
		if want != m.Event.Type() {
			t.Errorf("seq %d: %s on %s at rv %s; want %s", m.Seq, m.Event.Type(), m.Subject, m.Ext(contract.ExtResourceVersion), want)
		}
		seen[key] = true
	}
	for key, typ := range w.want {
		if !seen[key] {
			t.Errorf("the meaningful change %s (%s) is not in the stream", key, typ)
		}
	}
}

// checkPatches follows each object of typ through the stream: every
// update's patch, applied to the object last published, gives its object;
// its oldObject, when present, is the object last published.
func checkPatches(t *testing.T, msgs []replay.Message, typ string, withOld bool) {
	t.Helper()
	last := map[string][]byte{}
	patches := 0
	for _, m := range msgs {
		if !strings.HasPrefix(m.Subject, typ+".") {
			continue
		}
		var data map[string]json.RawMessage
		if len(m.Data) > 0 {
			must(t, json.Unmarshal(m.Data, &data))
		}
		switch m.Event.Type() {
		case contract.TypeSnapshotItem, contract.TypeAdded:
			last[m.Subject] = data["object"]
		case contract.TypeDeleted:
			delete(last, m.Subject)
		case contract.TypeUpdated:
			prev := last[m.Subject]
			last[m.Subject] = data["object"]
			if _, ok := data["oldObject"]; ok != withOld {
				t.Errorf("seq %d %s: oldObject present %v; want %v", m.Seq, m.Subject, ok, withOld)
			}
			if withOld && !sameJSONValue(t, data["oldObject"], prev) {
				t.Errorf("seq %d %s: oldObject is not the object last published:\n%s\nlast published:\n%s", m.Seq, m.Subject, data["oldObject"], prev)
			}
			p, err := jsonpatch.DecodePatch(data["patch"])
			if err != nil || prev == nil {
				t.Errorf("seq %d %s: patch %s (%v), object last published %s", m.Seq, m.Subject, data["patch"], err, prev)
				continue
			}
			got, err := p.Apply(prev)
			if err != nil || !sameJSONValue(t, got, data["object"]) {
				t.Errorf("seq %d %s: the patch %s applied to the object last published gives %s (%v); want %s", m.Seq, m.Subject, data["patch"], got, err, data["object"])
			}
			patches++
		}
	}
	if patches == 0 {
		t.Errorf("no update of %s carries a patch", typ)
	}
}

// checkProjected checks that no published object holds an ignored field.
func checkProjected(t *testing.T, msgs []replay.Message) {
	t.Helper()
	for _, m := range msgs {
		if len(m.Data) == 0 {
			continue
		}
		for _, field := range []string{"object", "oldObject"} {
			obj := dataObject(t, m, field)
			if obj == nil {
				continue
			}
			if _, ok := obj["status"]; ok && obj["kind"] == "Pod" {
				t.Errorf("seq %d %s %s: the %s of a Pod holds status", m.Seq, m.Event.Type(), m.Subject, field)
			}
			if md, ok := obj["metadata"].(map[string]any); ok {
				if a, ok := md["annotations"].(map[string]any); ok && a[heartbeat] != nil {
					t.Errorf("seq %d %s %s: the %s holds the ignored annotation %s", m.Seq, m.Event.Type(), m.Subject, field, heartbeat)
				}
			}
		}
	}
}

// checkLastEqualsList checks that the last message per subject of typ
// holds, for every object in want (subject → object as listed, projected
// and matched), that object, and that no other subject's last message is
// an object; metadata.resourceVersion and the annotations named in lag
// are left out of the comparison.
func checkLastEqualsList(t *testing.T, msgs []replay.Message, typ string, want map[string]map[string]any, lag ...string) {
	t.Helper()
	last := map[string]replay.Message{}
	for _, m := range msgs {
		if strings.HasPrefix(m.Subject, typ+".") && m.Ext(contract.ExtUID) != "" {
			last[m.Subject] = m
		}
	}
	for subject, m := range last {
		_, listed := want[subject]
		if m.Event.Type() == contract.TypeDeleted {
			if listed {
				t.Errorf("%s is listed in scope, but its last message is a delete (seq %d)", subject, m.Seq)
			}
			continue
		}
		if !listed {
			t.Errorf("%s is not listed in scope, but its last message is %s (seq %d)", subject, m.Event.Type(), m.Seq)
			continue
		}
		got, w := leaveOut(dataObject(t, m, "object"), lag), leaveOut(want[subject], lag)
		if !reflect.DeepEqual(got, w) {
			g, _ := json.Marshal(got)
			l, _ := json.Marshal(w)
			t.Errorf("%s: the last message (seq %d %s) holds\n%s\nthe list, projected:\n%s", subject, m.Seq, m.Event.Type(), g, l)
		}
	}
	for subject := range want {
		if _, ok := last[subject]; !ok {
			t.Errorf("%s is listed in scope but has no message", subject)
		}
	}
}

// dataObject is the object under field (object, oldObject) in m's data;
// nil if there is none.
func dataObject(t *testing.T, m replay.Message, field string) map[string]any {
	t.Helper()
	var data map[string]json.RawMessage
	must(t, json.Unmarshal(m.Data, &data))
	var obj map[string]any
	if raw, ok := data[field]; ok {
		must(t, json.Unmarshal(raw, &obj))
	}
	return obj
}

// leaveOut is obj without metadata.resourceVersion (if named) and the
// annotations named.
func leaveOut(obj map[string]any, fields []string) map[string]any {
	b, _ := json.Marshal(obj)
	var out map[string]any
	_ = json.Unmarshal(b, &out)
	md, _ := out["metadata"].(map[string]any)
	a, _ := md["annotations"].(map[string]any)
	for _, f := range fields {
		if f == "resourceVersion" {
			delete(md, f)
		} else {
			delete(a, f)
		}
	}
	return out
}

// listPods lists the Pods in scope, projected as rulesConfig says, by
// subject.
func (w *rulesWorkload) listPods() map[string]map[string]any {
	h := w.h
	ctx, cancel := w.ctx()
	defer cancel()
	list, err := h.cs.CoreV1().Pods(h.ns).List(ctx, metav1.ListOptions{})
	must(h.t, err)
	out := map[string]map[string]any{}
	for i := range list.Items {
		p := &list.Items[i]
		if p.Labels["tier"] != "frontend" {
			continue
		}
		obj := listed(h.t, p, "v1", "Pod")
		delete(obj, "status")
		delete(obj["metadata"].(map[string]any)["annotations"].(map[string]any), heartbeat)
		out[h.typeSubject("", "v1", "pods")+"."+h.ns+"."+p.Name] = obj
	}
	return out
}

// listCMs lists the ConfigMaps, projected as rulesConfig says, by subject.
func (w *rulesWorkload) listCMs() map[string]map[string]any {
	h := w.h
	ctx, cancel := w.ctx()
	defer cancel()
	list, err := h.cs.CoreV1().ConfigMaps(h.ns).List(ctx, metav1.ListOptions{})
	must(h.t, err)
	out := map[string]map[string]any{}
	for i := range list.Items {
		cm := &list.Items[i]
		if !strings.HasPrefix(cm.Name, "c") || len(cm.Name) != 2 {
			continue // kube-root-ca.crt and the like are not the workload's
		}
		obj := listed(h.t, cm, "v1", "ConfigMap")
		delete(obj["metadata"].(map[string]any)["annotations"].(map[string]any), heartbeat)
		out[h.cmSubject(h.ns, cm.Name)] = obj
	}
	return out
}

// listed is a listed object as the bridge publishes it: JSON, with
// apiVersion and kind, without managedFields.
func listed(t *testing.T, obj runtime.Object, apiVersion, kind string) map[string]any {
	b, err := json.Marshal(obj)
	must(t, err)
	var out map[string]any
	must(t, json.Unmarshal(b, &out))
	out["apiVersion"], out["kind"] = apiVersion, kind
	delete(out["metadata"].(map[string]any), "managedFields")
	return out
}

// sameJSONValue reports whether a and b are the same JSON value.
func sameJSONValue(t *testing.T, a, b []byte) bool {
	t.Helper()
	var va, vb any
	if json.Unmarshal(a, &va) != nil || json.Unmarshal(b, &vb) != nil {
		return false
	}
	return reflect.DeepEqual(va, vb)
}
