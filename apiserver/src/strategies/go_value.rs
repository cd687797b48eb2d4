//! Go's `%#v` of the values upstream's field errors print (field.Error's ErrorBody falls
//! back to `%#v` for a value that is not a string, number, bool or fmt.Stringer): quantities,
//! IntOrStrings, string slices and maps, and structs of pointers, in one place for every
//! strategy.

use serde_json::Value;

/// Go's `%q` of a string.
pub(crate) use k1s_apimachinery::gofmt::quote as go_quote;

/// Go's `%#v` of a `[]string`, as upstream prints an invalid slice value.
pub(crate) fn go_string_slice(values: &[Value]) -> String {
    go_typed_slice("string", values)
}

/// Go's `%#v` of a slice of a string type (`[]<element>{"a", "b"}`).
pub(crate) fn go_typed_slice(element: &str, values: &[Value]) -> String {
    let inner: Vec<String> = values
        .iter()
        .map(|v| go_quote(v.as_str().unwrap_or_default()))
        .collect();
    format!("[]{element}{{{}}}", inner.join(", "))
}

/// Go's `%#v` of a `map[string]string` (keys sorted, as fmt prints maps), `(nil)` when absent:
/// how upstream prints a template's labels that its selector does not match.
pub(crate) fn go_string_map(map: Option<&serde_json::Map<String, Value>>) -> String {
    let Some(map) = map else {
        return "map[string]string(nil)".to_string();
    };
    let entries: Vec<String> = map
        .iter()
        .map(|(k, v)| {
            format!(
                "{}:{}",
                go_quote(k),
                go_quote(v.as_str().unwrap_or_default())
            )
        })
        .collect();
    format!("map[string]string{{{}}}", entries.join(", "))
}

/// Go's `%#v` of a `metav1.LabelSelector` without requirements (an empty selector, as upstream
/// prints one it refuses).
pub(crate) fn go_label_selector(selector: &Value) -> String {
    let requirements = match selector.get("matchExpressions") {
        Some(Value::Array(items)) if items.is_empty() => "[]v1.LabelSelectorRequirement{}",
        _ => "[]v1.LabelSelectorRequirement(nil)",
    };
    format!(
        "v1.LabelSelector{{MatchLabels:{}, MatchExpressions:{requirements}}}",
        go_string_map(selector.get("matchLabels").and_then(Value::as_object))
    )
}

/// Go's `%#v` of an `intstr.IntOrString`, as upstream prints one as a bad value.
pub(crate) fn go_int_or_string(v: &Value) -> String {
    match v {
        Value::String(s) => format!("intstr.IntOrString{{Type:1, IntVal:0, StrVal:{s:?}}}"),
        v => format!(
            "intstr.IntOrString{{Type:0, IntVal:{}, StrVal:\"\"}}",
            v.as_i64().unwrap_or(0)
        ),
    }
}

/// Go's `%#v` of a struct of pointers, as upstream prints a whole security context or
/// seccomp profile: a set field shows a pointer, whose address no client can rely on.
pub(crate) fn go_struct(name: &str, v: &Value, fields: &[(&str, &str, &str)]) -> String {
    let shown: Vec<String> = fields
        .iter()
        .map(|(go, ty, key)| match v.get(key).filter(|x| !x.is_null()) {
            Some(Value::String(s)) if ty.is_empty() => format!("{go}:{s:?}"),
            None if ty.is_empty() => format!("{go}:\"\""),
            Some(_) => format!("{go}:({ty})(0xc000000000)"),
            None => format!("{go}:({ty})(nil)"),
        })
        .collect();
    format!("{name}{{{}}}", shown.join(", "))
}

/// Go's `%#v` of the `resource.Quantity` that ParseQuantity makes of `text`, as upstream's
/// field errors print a quantity: its int64 amount and scale, the original string when it is
/// already canonical, and the format. Amounts beyond int64 precision live in an `inf.Dec`
/// whose address Go prints; a placeholder stands in for it.
pub(crate) fn go_quantity(text: &str) -> String {
    let (value, scale, cached, format, dec) = match go_parse_quantity(text) {
        Some(GoQuantity::Int {
            value,
            scale,
            cached,
            format,
        }) => (value, scale, cached, format, "nil"),
        Some(GoQuantity::Dec { format }) => (0, 0, false, format, "0xc000000000"),
        None => (0, 0, false, "DecimalSI", "nil"),
    };
    let s = if cached { text } else { "" };
    format!(
        "resource.Quantity{{i:resource.int64Amount{{value:{value}, scale:{scale}}}, d:resource.infDecAmount{{Dec:(*inf.Dec)({dec})}}, s:{s:?}, Format:{format:?}}}"
    )
}

enum GoQuantity {
    /// The fast path: an int64 amount at a decimal scale (`cached`: the string is kept).
    Int {
        value: i64,
        scale: i32,
        cached: bool,
        format: &'static str,
    },
    /// The slow path (an `inf.Dec`).
    Dec { format: &'static str },
}

/// The fields of upstream's ParseQuantity result for `s` (None when it does not parse).
fn go_parse_quantity(s: &str) -> Option<GoQuantity> {
    if s == "0" {
        return Some(GoQuantity::Int {
            value: 0,
            scale: 0,
            cached: true,
            format: "DecimalSI",
        });
    }
    let b = s.as_bytes();
    let (positive, mut pos) = match b.first() {
        Some(b'-') => (false, 1),
        Some(b'+') => (true, 1),
        _ => (true, 0),
    };
    while pos < b.len() && b[pos] == b'0' {
        pos += 1;
    }
    let digits = |from: usize| from + b[from..].iter().take_while(|c| c.is_ascii_digit()).count();
    let num_end = digits(pos);
    let mut num = &s[pos..num_end];
    if num.is_empty() {
        num = "0";
    }
    pos = num_end;
    let mut denom = "";
    if pos < b.len() && b[pos] == b'.' {
        let end = digits(pos + 1);
        denom = &s[pos + 1..end];
        pos = end;
    }
    let suffix = &s[pos..];
    let (base2, exponent, format) = match suffix {
        "" => (false, 0, "DecimalSI"),
        "n" => (false, -9, "DecimalSI"),
        "u" => (false, -6, "DecimalSI"),
        "m" => (false, -3, "DecimalSI"),
        "k" => (false, 3, "DecimalSI"),
        "M" => (false, 6, "DecimalSI"),
        "G" => (false, 9, "DecimalSI"),
        "T" => (false, 12, "DecimalSI"),
        "P" => (false, 15, "DecimalSI"),
        "E" => (false, 18, "DecimalSI"),
        "Ki" => (true, 10, "BinarySI"),
        "Mi" => (true, 20, "BinarySI"),
        "Gi" => (true, 30, "BinarySI"),
        "Ti" => (true, 40, "BinarySI"),
        "Pi" => (true, 50, "BinarySI"),
        "Ei" => (true, 60, "BinarySI"),
        _ => {
            let exp = suffix.strip_prefix(['e', 'E'])?;
            (false, exp.parse::<i32>().ok()?, "DecimalExponent")
        }
    };
    let digits_len = i32::try_from(num.len() + denom.len()).ok()?;
    let (mut scale, mantissa, precision) = if base2 {
        if denom.is_empty() {
            let approx = (exponent as f32 * 3.0 / 10.0) as i32;
            (0, 1i64 << exponent, 15 - num.len() as i32 - approx - 1)
        } else {
            (0, 1, -1)
        }
    } else {
        (exponent, 1, 18 - digits_len)
    };
    if precision >= 0 {
        scale -= denom.len() as i32;
        if scale >= -9 {
            let shifted = format!("{num}{denom}");
            let value: i64 = shifted.parse().ok()?;
            if let Some(result) = value.checked_mul(mantissa) {
                let cached = if base2 {
                    exponent % 10 == 0 && value & 0x07 != 0
                } else {
                    scale % 3 == 0 && !shifted.ends_with("000") && !shifted.starts_with('0')
                };
                return Some(GoQuantity::Int {
                    value: if positive { result } else { -result },
                    scale,
                    cached,
                    format,
                });
            }
        }
    }
    Some(GoQuantity::Dec { format })
}
