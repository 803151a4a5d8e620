// Copyright 2024 The Example Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestServeHTTP(t *testing.T) {
	s := &Server{version: "go1.99.0", shipped: true}
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	if body := rec.Body.String(); !strings.Contains(body, "Yes!") {
		t.Errorf("body = %q, want it to contain Yes!", body)
	}
}

func TestPollsUntilReleased(t *testing.T) {
	calls := 0
	feed := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls++
		if calls < 3 {
			fmt.Fprint(w, `[{"version":"go1.98.0"}]`)
			return
		}
		fmt.Fprint(w, `[{"version":"go1.99.0"},{"version":"go1.98.0"}]`)
	}))
	defer feed.Close()

	done := make(chan bool)
	sleep = func(time.Duration) {}
	donePoll = func() { done <- true }
	defer func() { sleep, donePoll = time.Sleep, func() {} }()

	NewServer(feed.URL, "go1.99.0", time.Millisecond)
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("timed out waiting for release")
	}
	if calls != 3 {
		t.Errorf("polled %d times, want 3", calls)
	}
}
