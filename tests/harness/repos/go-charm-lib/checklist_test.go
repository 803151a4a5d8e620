package checklist

import (
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
)

func press(m Model, keys ...string) Model {
	for _, k := range keys {
		var msg tea.KeyPressMsg
		switch k {
		case "space":
			msg = tea.KeyPressMsg{Code: tea.KeySpace, Text: " "}
		case "down":
			msg = tea.KeyPressMsg{Code: tea.KeyDown}
		case "esc":
			msg = tea.KeyPressMsg{Code: tea.KeyEscape}
		default:
			msg = tea.KeyPressMsg{Code: rune(k[0]), Text: k}
		}
		m, _ = m.Update(msg)
	}
	return m
}

func items() []Item {
	return []Item{{Title: "apples"}, {Title: "bananas"}, {Title: "cherries", Disabled: true}}
}

func TestToggle(t *testing.T) {
	m := press(New(items()), "space", "down", "space")
	got := m.Selected()
	if len(got) != 2 || got[0].Title != "apples" || got[1].Title != "bananas" {
		t.Fatalf("Selected() = %+v", got)
	}
}

func TestDisabledCannotBeToggled(t *testing.T) {
	m := press(New(items()), "down", "down", "space")
	if n := len(m.Selected()); n != 0 {
		t.Fatalf("expected nothing selected, got %d", n)
	}
}

func TestLimit(t *testing.T) {
	m := press(New(items(), WithLimit(1)), "space", "down", "space")
	if n := len(m.Selected()); n != 1 {
		t.Fatalf("expected 1 selected with limit, got %d", n)
	}
}

func TestFilter(t *testing.T) {
	m := press(New(items()), "/", "b", "a", "n")
	if !strings.Contains(m.View(), "bananas") || strings.Contains(m.View(), "apples") {
		t.Fatalf("filter not applied:\n%s", m.View())
	}
	m = press(m, "esc")
	if m.Filter() != "" {
		t.Fatalf("esc should clear filter, got %q", m.Filter())
	}
}
