package main

import (
	"context"
	"testing"
	"time"
)

// TestSmokeIdleMQTT runs the idle scenario with MQTT subscribers against
// kraken's MQTT listener in a child process, from two worker processes:
// every connection gets CONNACK, its SUBACK and its two messages (from the
// WebSocket publisher), none is closed, and the ramp has its points.
func TestSmokeIdleMQTT(t *testing.T) {
	url, _, maddr, pid := startKrakenMQTT(t, time.Minute, 0)
	r := run(t, Config{URL: url, Transport: "mqtt", MQTTAddr: maddr, Scenario: "idle", N: 30, Steps: 3,
		Procs: 2, PID: pid, Settle: 100 * time.Millisecond, Spawn: testSpawn})
	wantEq(t, r, "idle_connections", 30)
	wantEq(t, r, "idle_connect_errors", 0)
	wantEq(t, r, "idle_missed", 0)
	wantEq(t, r, "idle_disconnects", 0)
	wantEq(t, r, "publisher_error_frames", 0)
	wantPositive(t, r, "idle_rss_baseline")
	metric(t, r, "idle_rss_slope")
	if len(r.Points) != 3 || r.Points[0].Conns != 10 || r.Points[2].Conns != 30 {
		t.Errorf("idle points = %+v, want 3 points from 10 to 30 connections", r.Points)
	}
	if got := r.Params["transport"]; got != "mqtt" {
		t.Errorf("params transport = %v, want mqtt", got)
	}
}

// TestIdleMQTTFlags: --transport mqtt needs --mqtt-addr and is the idle
// scenario's only.
func TestIdleMQTTFlags(t *testing.T) {
	for _, cfg := range []Config{
		{URL: "ws://127.0.0.1:1/ws", Transport: "mqtt", Scenario: "idle"},
		{URL: "ws://127.0.0.1:1/ws", Transport: "mqtt", MQTTAddr: "127.0.0.1:1", Scenario: "fanout"},
		{URL: "ws://127.0.0.1:1/ws", Transport: "carrier-pigeon", Scenario: "idle"},
	} {
		if _, err := Run(context.Background(), cfg); err == nil {
			t.Errorf("%+v: no error", cfg)
		}
	}
}
