package checklist

// Option configures a Model in [New].
type Option func(*Model)

// WithHeight sets how many rows are visible at once.
func WithHeight(h int) Option {
	return func(m *Model) {
		if h > 0 {
			m.height = h
		}
	}
}

// WithLimit caps how many items may be checked at once. Zero means no limit.
func WithLimit(n int) Option {
	return func(m *Model) { m.limit = n }
}

// WithStyles replaces the default styles.
func WithStyles(s Styles) Option {
	return func(m *Model) { m.Styles = s }
}

// WithKeyMap replaces the default keybindings.
func WithKeyMap(k KeyMap) Option {
	return func(m *Model) { m.KeyMap = k }
}
