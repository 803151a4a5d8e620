// Package checklist provides a multi-select checklist component for Bubble Tea
// programs. Items can be toggled, filtered by typing, and read back with
// [Model.Selected].
package checklist

import (
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
)

// Item is a single row in the checklist.
type Item struct {
	Title   string
	Detail  string
	Checked bool
	// Disabled items are rendered but cannot be toggled.
	Disabled bool
}

// Model is the checklist component. Create one with [New].
type Model struct {
	KeyMap KeyMap
	Styles Styles

	items    []Item
	visible  []int // indexes into items, after filtering
	cursor   int
	offset   int
	height   int
	width    int
	filter   string
	filterOn bool
	limit    int
	focused  bool
}

// New returns a checklist holding items, focused and ready to use.
func New(items []Item, opts ...Option) Model {
	m := Model{
		KeyMap:  DefaultKeyMap(),
		Styles:  DefaultStyles(true),
		items:   items,
		height:  10,
		focused: true,
	}
	for _, opt := range opts {
		opt(&m)
	}
	m.refilter()
	return m
}

// Init returns no command; it exists so Model can be used like other Bubbles.
func (m Model) Init() tea.Cmd { return nil }

// Update handles key presses and window resizes.
func (m Model) Update(msg tea.Msg) (Model, tea.Cmd) {
	if !m.focused {
		return m, nil
	}
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width = msg.Width
	case tea.KeyPressMsg:
		if m.filterOn {
			return m.updateFilter(msg), nil
		}
		switch {
		case key.Matches(msg, m.KeyMap.Up):
			m.move(-1)
		case key.Matches(msg, m.KeyMap.Down):
			m.move(1)
		case key.Matches(msg, m.KeyMap.Toggle):
			m.toggle()
		case key.Matches(msg, m.KeyMap.All):
			m.setAll(!m.allChecked())
		case key.Matches(msg, m.KeyMap.Filter):
			m.filterOn = true
		}
	}
	return m, nil
}

func (m *Model) move(delta int) {
	if len(m.visible) == 0 {
		return
	}
	m.cursor = (m.cursor + delta + len(m.visible)) % len(m.visible)
	if m.cursor < m.offset {
		m.offset = m.cursor
	} else if m.cursor >= m.offset+m.height {
		m.offset = m.cursor - m.height + 1
	}
}

func (m *Model) toggle() {
	if len(m.visible) == 0 {
		return
	}
	it := &m.items[m.visible[m.cursor]]
	if it.Disabled {
		return
	}
	if !it.Checked && m.limit > 0 && len(m.Selected()) >= m.limit {
		return
	}
	it.Checked = !it.Checked
}

func (m *Model) setAll(v bool) {
	for _, i := range m.visible {
		if !m.items[i].Disabled {
			m.items[i].Checked = v
		}
	}
}

func (m Model) allChecked() bool {
	for _, i := range m.visible {
		if !m.items[i].Checked && !m.items[i].Disabled {
			return false
		}
	}
	return true
}

// Selected returns the checked items in their original order.
func (m Model) Selected() []Item {
	var out []Item
	for _, it := range m.items {
		if it.Checked {
			out = append(out, it)
		}
	}
	return out
}

// Focus makes the component react to input.
func (m *Model) Focus() { m.focused = true }

// Blur stops the component from reacting to input.
func (m *Model) Blur() { m.focused = false }

// Focused reports whether the component has focus.
func (m Model) Focused() bool { return m.focused }

// Filter returns the current filter text.
func (m Model) Filter() string { return strings.TrimSpace(m.filter) }
