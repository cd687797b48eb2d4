//! Go-style value formatting (`%q`, `%#v` of string slices, `json.Marshal`) so messages and
//! hashed bytes match upstream byte for byte.

/// Quotes a string the way Go's `%q` / `strconv.Quote` does for the common cases: double quotes,
/// backslash escapes for `"` and `\`, C escapes for control characters, printable Unicode kept.
pub fn quote(s: &str) -> String {
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

/// Go's `time.Time.String` of an RFC 3339 time, in UTC (`2026-01-02 03:04:05.25 +0000 UTC`:
/// fractional seconds trimmed, none when zero); `None` when `rfc3339` is not a time.
pub fn time_string(rfc3339: &str) -> Option<String> {
    let at = rfc3339.parse::<jiff::Timestamp>().ok()?;
    Some(at.strftime("%Y-%m-%d %H:%M:%S%.f +0000 UTC").to_string())
}

/// Go's `json.Marshal`: compact (a `serde_json::Value`'s keys sorted, as Go sorts map keys) and
/// HTML-safe (`<`, `>`, `&`, U+2028 and U+2029 escaped as `\u003c`, ...), which serde_json does
/// not do. These characters only ever occur inside strings, so escaping the whole text is exact.
pub fn json_marshal<T: serde::Serialize>(value: &T) -> String {
    let text = serde_json::to_string(value).unwrap_or_default();
    if !text.contains(['<', '>', '&', '\u{2028}', '\u{2029}']) {
        return text;
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    out
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
    fn json_marshals_like_go() {
        let v = serde_json::json!({"z": ["a && b < c > d"], "a": 1, "l": "\u{2028}"});
        assert_eq!(
            json_marshal(&v),
            r#"{"a":1,"l":"\u2028","z":["a \u0026\u0026 b \u003c c \u003e d"]}"#
        );
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
