package config

import (
	"testing"
	"time"
)

// The delivery lifetime keys: defaults, explicit values, and negative values refused with
// their position.
func TestDeliveryLifetimes(t *testing.T) {
	d := Default().Deliveries
	if d.TTL != 0 || d.DeliveredRetention.D() != 30*24*time.Hour || d.DeadRetention != 0 {
		t.Errorf("defaults: ttl %v, delivered_retention %v, dead_retention %v", d.TTL, d.DeliveredRetention, d.DeadRetention)
	}
	c := mustParse(t, cmd+"deliveries: {ttl: 15h, delivered_retention: 0, dead_retention: 168h}\n")
	if d := c.Deliveries; d.TTL.D() != 15*time.Hour || d.DeliveredRetention != 0 || d.DeadRetention.D() != 168*time.Hour {
		t.Errorf("parsed %+v", d)
	}
	for src, want := range map[string]string{
		cmd + "deliveries: {ttl: -1s}\n":                 "f.yaml:2:19: deliveries.ttl: must not be negative, got -1s",
		cmd + "deliveries: {delivered_retention: -1h}\n": "f.yaml:2:35: deliveries.delivered_retention: must not be negative, got -1h",
		cmd + "deliveries: {dead_retention: -1h}\n":      "f.yaml:2:30: deliveries.dead_retention: must not be negative, got -1h",
	} {
		c, err := Parse("f.yaml", []byte(src))
		if err == nil {
			err = c.Validate()
		}
		if err == nil || err.Error() != want {
			t.Errorf("%q: error %v, want %s", src, err, want)
		}
	}
}
