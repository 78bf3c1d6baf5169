package redact

// isKeyChar is a byte of an unquoted key: letters, digits, '_', '-', '.'.
func isKeyChar(c byte) bool {
	return isLowerOrDigit(c) || isUpper(c) || c == '_' || c == '-' || c == '.'
}

// isValueDelim ends an unquoted value: white space and control bytes,
// quotes, and the separators of lists, queries and markup.
func isValueDelim(c byte) bool {
	switch c {
	case '"', '\'', '`', ',', ';', '&', ')', ']', '}', '<', '>', 0x7f:
		return true
	}
	return c <= ' '
}

// tokenEnd returns the end of the unquoted value starting at i.
func tokenEnd(p []byte, i int) int {
	for i < len(p) && !isValueDelim(p[i]) {
		i++
	}
	return i
}

// skipBlanks skips spaces and tabs.
func skipBlanks(p []byte, i int) int {
	for i < len(p) && (p[i] == ' ' || p[i] == '\t') {
		i++
	}
	return i
}

// lineEnd returns the index of the next '\n' at or after i, or len(p).
func lineEnd(p []byte, i int) int {
	for i < len(p) && p[i] != '\n' {
		i++
	}
	return i
}
