//! Go-style value formatting (`%q`, `%#v` of string slices) so messages match upstream byte for byte.

/// Quotes a string the way Go's `%q` / `strconv.Quote` does for the common cases: double quotes,
/// backslash escapes for `"` and `\`, C escapes for control characters, printable Unicode kept.
pub(crate) fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{07}' => out.push_str("\\a"),
            '\u{08}' => out.push_str("\\b"),
            '\u{0c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{0b}' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c if c.is_control() => {
                let n = c as u32;
                if n <= 0xffff {
                    out.push_str(&format!("\\u{n:04x}"));
                } else {
                    out.push_str(&format!("\\U{n:08x}"));
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Go's `%#v` of a `[]string`: `[]string{"a", "b"}`, or `[]string(nil)` when `nil_if_empty`
/// and the slice is empty (a nil slice in Go).
pub(crate) fn string_slice(values: &[String], nil_if_empty: bool) -> String {
    if values.is_empty() && nil_if_empty {
        return "[]string(nil)".to_string();
    }
    let inner: Vec<String> = values.iter().map(|v| quote(v)).collect();
    format!("[]string{{{}}}", inner.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_like_go() {
        assert_eq!(quote("foo"), "\"foo\"");
        assert_eq!(quote("a\"b\\c"), "\"a\\\"b\\\\c\"");
        assert_eq!(quote("x\ny\t"), "\"x\\ny\\t\"");
        assert_eq!(quote("\u{01}"), "\"\\x01\"");
        assert_eq!(quote("héllo"), "\"héllo\"");
        assert_eq!(quote(""), "\"\"");
    }

    #[test]
    fn string_slices_like_go() {
        assert_eq!(string_slice(&[], true), "[]string(nil)");
        assert_eq!(string_slice(&[], false), "[]string{}");
        assert_eq!(
            string_slice(&["a".to_string(), "b".to_string()], true),
            "[]string{\"a\", \"b\"}"
        );
    }
}
