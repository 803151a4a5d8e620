package checklist

import "charm.land/lipgloss/v2"

// Styles holds the lipgloss styles used to render the checklist.
type Styles struct {
	Cursor    lipgloss.Style
	Checked   lipgloss.Style
	Unchecked lipgloss.Style
	Title     lipgloss.Style
	Detail    lipgloss.Style
	Disabled  lipgloss.Style
	Filter    lipgloss.Style
	Empty     lipgloss.Style
}

// DefaultStyles returns the default styles. Pass the result of
// lipgloss.HasDarkBackground (or a tea.BackgroundColorMsg) as isDark.
func DefaultStyles(isDark bool) Styles {
	lightDark := lipgloss.LightDark(isDark)
	accent := lightDark(lipgloss.Color("#5A56E0"), lipgloss.Color("#7571F9"))
	subtle := lightDark(lipgloss.Color("#9B9B9B"), lipgloss.Color("#5C5C5C"))

	return Styles{
		Cursor:    lipgloss.NewStyle().Foreground(accent).Bold(true),
		Checked:   lipgloss.NewStyle().Foreground(accent),
		Unchecked: lipgloss.NewStyle().Foreground(subtle),
		Title:     lipgloss.NewStyle(),
		Detail:    lipgloss.NewStyle().Foreground(subtle),
		Disabled:  lipgloss.NewStyle().Foreground(subtle).Strikethrough(true),
		Filter:    lipgloss.NewStyle().Foreground(accent),
		Empty:     lipgloss.NewStyle().Foreground(subtle).Italic(true),
	}
}
