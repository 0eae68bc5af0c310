package heartbeat

import "testing"

func TestNormalizeReason(t *testing.T) {
	for in, want := range map[string]string{
		"  cron:job-1  ": "cron:job-1",
		"":               "requested",
		"   ":            "requested",
		"manual":         "manual",
	} {
		if got := NormalizeReason(in); got != want {
			t.Errorf("NormalizeReason(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestKindOf(t *testing.T) {
	for in, want := range map[string]ReasonKind{
		"retry":            KindRetry,
		"interval":         KindInterval,
		"manual":           KindManual,
		"exec-event":       KindExecEvent,
		"wake":             KindWake,
		"acp:spawn:stream": KindWake,
		"acp:spawn:":       KindWake,
		"continuation":     KindWake,
		"cron:job-1":       KindCron,
		"hook:wake":        KindHook,
		"  hook:wake  ":    KindHook,
		"requested":        KindOther,
		"slow":             KindOther,
		"":                 KindOther,
	} {
		if got := KindOf(in); got != want {
			t.Errorf("KindOf(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestReasonClasses(t *testing.T) {
	for _, tc := range []struct {
		reason        string
		event, action bool
		priority      int
	}{
		{"exec-event", true, true, PriorityAction},
		{"cron:job-1", true, false, PriorityDefault},
		{"wake", true, false, PriorityDefault},
		{"acp:spawn:x", true, false, PriorityDefault},
		{"hook:wake", true, true, PriorityAction},
		{"interval", false, false, PriorityInterval},
		{"manual", false, true, PriorityAction},
		{"retry", false, false, PriorityRetry},
		{"requested", false, false, PriorityDefault},
	} {
		if got := IsEventDriven(tc.reason); got != tc.event {
			t.Errorf("IsEventDriven(%q) = %v", tc.reason, got)
		}
		if got := IsAction(tc.reason); got != tc.action {
			t.Errorf("IsAction(%q) = %v", tc.reason, got)
		}
		if got := Priority(tc.reason); got != tc.priority {
			t.Errorf("Priority(%q) = %d, want %d", tc.reason, got, tc.priority)
		}
	}
}
