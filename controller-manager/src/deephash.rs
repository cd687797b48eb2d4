//! Upstream's `hashutil.DeepHashObject` for pod templates: the text go-spew prints for a Go
//! `v1.PodTemplateSpec` (`%#v`, map keys sorted, methods off), built from the template's JSON
//! and the Go struct layout of Kubernetes 1.33 (`go_layout.rs`), so that `pod-template-hash`
//! labels and DaemonSet revision names equal those of kube-controller-manager.
//!
//! go-spew prints every field of every struct in declaration order, zero values included, with
//! each value's Go type in parentheses, except where its container already named the type
//! (slice elements, map keys and values, the target of a pointer). The JSON is read as the
//! controller's informer holds it after a protobuf decode: an empty list or map is nil, a
//! quantity is `ParseQuantity` of its canonical string, an absent struct is its zero value.
//!
//! Not reproduced: a template that sets `metadata.creationTimestamp` (go-spew prints the time's
//! `*time.Location`, whose fields depend on the process's time-zone state; it is printed here as
//! the zero time) and quantities beyond the range of `k1s_apimachinery::quantity`.

mod go_layout;

use serde_json::Value;

pub use go_layout::POD_TEMPLATE_SPEC;

/// A Go type as go-spew sees it: its printed name and its shape.
pub enum GoType {
    /// A struct and its fields in declaration order (unexported ones included).
    Struct(&'static str, &'static [Field]),
    Ptr(&'static str, &'static GoType),
    Slice(&'static str, &'static GoType),
    Map(&'static str, &'static GoType, &'static GoType),
    Str(&'static str),
    Bool(&'static str),
    Int(&'static str),
    Uint(&'static str),
}

/// A struct field: its Go name, the JSON key it is read from (the Go name for fields without a
/// JSON tag), and whether its fields sit inline in the parent's JSON object.
pub struct Field {
    pub name: &'static str,
    pub json: &'static str,
    pub inline: bool,
    pub ty: &'static GoType,
}

/// go-spew's `%#v` of a value of type `ty` given as JSON.
pub fn spew(ty: &GoType, value: &Value) -> String {
    let mut out = String::with_capacity(4096);
    write(&mut out, ty, value, true);
    out
}

fn write(out: &mut String, ty: &GoType, value: &Value, show_type: bool) {
    let typed = |out: &mut String, name: &str| {
        if show_type {
            out.push('(');
            out.push_str(name);
            out.push(')');
        }
    };
    match ty {
        GoType::Ptr(name, target) => {
            if value.is_null() {
                typed(out, name);
                out.push_str("<nil>");
            } else {
                if show_type {
                    typed(out, name);
                } else {
                    out.push_str("<*>");
                }
                write(out, target, value, false);
            }
        }
        GoType::Struct(name, fields) => {
            typed(out, name);
            if let Some(native) = native_struct(name, value) {
                write_fields(out, fields, &native);
            } else {
                write_fields(out, fields, value);
            }
        }
        GoType::Slice(name, elem) => {
            typed(out, name);
            match value.as_array().filter(|a| !a.is_empty()) {
                None => out.push_str("<nil>"),
                Some(items) => {
                    out.push('[');
                    for (i, item) in items.iter().enumerate() {
                        if i > 0 {
                            out.push(' ');
                        }
                        write(out, elem, item, false);
                    }
                    out.push(']');
                }
            }
        }
        GoType::Map(name, key, elem) => {
            typed(out, name);
            match value.as_object().filter(|m| !m.is_empty()) {
                None => out.push_str("<nil>"),
                Some(entries) => {
                    let mut keys: Vec<&String> = entries.keys().collect();
                    keys.sort();
                    out.push_str("map[");
                    for (i, k) in keys.into_iter().enumerate() {
                        if i > 0 {
                            out.push(' ');
                        }
                        write(out, key, &Value::String(k.clone()), false);
                        out.push(':');
                        write(out, elem, &entries[k], false);
                    }
                    out.push(']');
                }
            }
        }
        GoType::Str(name) => {
            typed(out, name);
            out.push_str(value.as_str().unwrap_or(""));
        }
        GoType::Bool(name) => {
            typed(out, name);
            out.push_str(if value.as_bool().unwrap_or(false) {
                "true"
            } else {
                "false"
            });
        }
        GoType::Int(name) => {
            typed(out, name);
            out.push_str(&value.as_i64().unwrap_or(0).to_string());
        }
        GoType::Uint(name) => {
            typed(out, name);
            out.push_str(&value.as_u64().unwrap_or(0).to_string());
        }
    }
}

fn write_fields(out: &mut String, fields: &[Field], value: &Value) {
    out.push('{');
    for (i, f) in fields.iter().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        out.push_str(f.name);
        out.push(':');
        let v = if f.inline {
            value
        } else {
            value.get(f.json).unwrap_or(&Value::Null)
        };
        write(out, f.ty, v, true);
    }
    out.push('}');
}

/// The Go fields of the types whose JSON form is not their struct (they marshal themselves),
/// keyed by Go field name as the layout names unexported fields.
fn native_struct(name: &str, value: &Value) -> Option<Value> {
    match name {
        "resource.Quantity" => Some(quantity_fields(value.as_str().unwrap_or("0"))),
        "intstr.IntOrString" => Some(match value {
            Value::String(s) => serde_json::json!({"Type": 1, "StrVal": s}),
            other => serde_json::json!({"Type": 0, "IntVal": other.as_i64().unwrap_or(0)}),
        }),
        // Templates carry no timestamps; a zero time is all-zero words and no location.
        "time.Time" => Some(Value::Null),
        _ => None,
    }
}

/// The fields of the `resource.Quantity` the informer holds for `s`: a decoded quantity keeps
/// its text only when ParseQuantity finds it canonical, the protobuf encoding sends that text or
/// else the canonical form, and the informer parses what was sent.
fn quantity_fields(s: &str) -> Value {
    let sent = match parse_go_quantity(s) {
        Some(GoQuantity::Int64 { keep: true, .. }) => s.to_string(),
        _ => k1s_apimachinery::quantity::Quantity::parse(s)
            .map(|q| q.to_string())
            .unwrap_or_else(|| "0".into()),
    };
    match parse_go_quantity(&sent) {
        Some(GoQuantity::Int64 {
            value,
            scale,
            format,
            keep,
        }) => serde_json::json!({
            "i": {"value": value, "scale": scale},
            "s": if keep { sent.as_str() } else { "" },
            "Format": format,
        }),
        Some(GoQuantity::Dec {
            negative,
            unscaled,
            scale,
            format,
        }) => {
            // big.nat: little-endian 64-bit words, none for zero.
            let words: Vec<u64> = [unscaled as u64, (unscaled >> 64) as u64]
                .into_iter()
                .take(if unscaled >> 64 != 0 {
                    2
                } else {
                    usize::from(unscaled != 0)
                })
                .collect();
            serde_json::json!({
                "d": {"Dec": {"unscaled": {"neg": negative, "abs": words}, "scale": scale}},
                "Format": format,
            })
        }
        None => serde_json::json!({"Format": "DecimalSI"}),
    }
}

/// A quantity as Go's ParseQuantity builds it.
#[derive(Debug, PartialEq)]
enum GoQuantity {
    /// The int64 fast path: value × 10^scale, and whether the text is kept as canonical.
    Int64 {
        value: i64,
        scale: i32,
        format: &'static str,
        keep: bool,
    },
    /// The `inf.Dec` path: ±unscaled × 10^-scale.
    Dec {
        negative: bool,
        unscaled: u128,
        scale: i32,
        format: &'static str,
    },
}

/// ParseQuantity's two paths; `None` for text it refuses or amounts beyond 128 bits.
fn parse_go_quantity(s: &str) -> Option<GoQuantity> {
    if s == "0" {
        return Some(GoQuantity::Int64 {
            value: 0,
            scale: 0,
            format: "DecimalSI",
            keep: true,
        });
    }
    let bytes = s.as_bytes();
    let (positive, start) = match bytes.first()? {
        b'-' => (false, 1),
        b'+' => (true, 1),
        _ => (true, 0),
    };
    let digits_end = |from: usize| {
        from + bytes[from..]
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .count()
    };
    let zeros = bytes[start..].iter().take_while(|b| **b == b'0').count();
    let num_end = digits_end(start + zeros);
    let num = match &s[start + zeros..num_end] {
        "" => "0",
        n => n,
    };
    let mut denom = "";
    let mut pos = num_end;
    if pos < bytes.len() && bytes[pos] == b'.' {
        let end = digits_end(pos + 1);
        denom = &s[pos + 1..end];
        pos = end;
    }
    let (base, exponent, format) = match &s[pos..] {
        "" => (10, 0, "DecimalSI"),
        "n" => (10, -9, "DecimalSI"),
        "u" => (10, -6, "DecimalSI"),
        "m" => (10, -3, "DecimalSI"),
        "k" => (10, 3, "DecimalSI"),
        "M" => (10, 6, "DecimalSI"),
        "G" => (10, 9, "DecimalSI"),
        "T" => (10, 12, "DecimalSI"),
        "P" => (10, 15, "DecimalSI"),
        "E" => (10, 18, "DecimalSI"),
        "Ki" => (2, 10, "BinarySI"),
        "Mi" => (2, 20, "BinarySI"),
        "Gi" => (2, 30, "BinarySI"),
        "Ti" => (2, 40, "BinarySI"),
        "Pi" => (2, 50, "BinarySI"),
        "Ei" => (2, 60, "BinarySI"),
        e if e.len() > 1 && matches!(e.as_bytes()[0], b'e' | b'E') => {
            (10, e[1..].parse::<i32>().ok()?, "DecimalExponent")
        }
        _ => return None,
    };
    let shifted = format!("{num}{denom}");
    let (scale, mantissa, precision) = if base == 2 {
        let precision = if denom.is_empty() {
            15 - num.len() as i32 - (exponent as f32 * 3.0 / 10.0) as i32 - 1
        } else {
            -1
        };
        (0, 1i64 << exponent, precision)
    } else {
        (exponent, 1, 18 - shifted.len() as i32)
    };
    let scale = scale - denom.len() as i32;
    if precision >= 0 && scale >= -9 {
        let value: i64 = shifted.parse().ok()?;
        if let Some(mut result) = value.checked_mul(mantissa) {
            if !positive {
                result = -result;
            }
            let keep = if base == 2 {
                exponent % 10 == 0 && value & 0x07 != 0
            } else {
                scale % 3 == 0 && !shifted.ends_with("000") && !shifted.starts_with('0')
            };
            return Some(GoQuantity::Int64 {
                value: result,
                scale,
                format,
                keep,
            });
        }
    }
    // inf.Dec: the digits at scale len(denom), the suffix applied, rounded up to nano units,
    // binary amounts capped at 2^63-1.
    let mut unscaled: u128 = shifted.parse().ok()?;
    let mut dec_scale = denom.len() as i32;
    if base == 10 {
        dec_scale -= exponent;
    } else {
        unscaled = unscaled.checked_mul(1u128.checked_shl(exponent as u32)?)?;
    }
    if unscaled != 0 {
        if dec_scale <= 9 {
            unscaled = unscaled.checked_mul(10u128.checked_pow((9 - dec_scale) as u32)?)?;
        } else {
            let divisor = 10u128.checked_pow((dec_scale - 9) as u32)?;
            unscaled = unscaled.div_ceil(divisor);
        }
        dec_scale = 9;
    }
    let mut format = format;
    let max = i64::MAX as u128;
    if format == "BinarySI" && unscaled > max * 1_000_000_000 {
        unscaled = max;
        dec_scale = 0;
    }
    if format == "BinarySI" && unscaled != 0 && unscaled < 1_000_000_000 && dec_scale == 9 {
        format = "DecimalSI";
    }
    Some(GoQuantity::Dec {
        negative: !positive && unscaled != 0,
        unscaled,
        scale: dec_scale,
        format,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantities_parse_to_gos_int64_amounts() {
        // (input, value, scale, format, s kept) as ParseQuantity's fast path gives them.
        let int = |value, scale, format, keep| {
            Some(GoQuantity::Int64 {
                value,
                scale,
                format,
                keep,
            })
        };
        assert_eq!(parse_go_quantity("500m"), int(500, -3, "DecimalSI", true));
        assert_eq!(parse_go_quantity("1Gi"), int(1 << 30, 0, "BinarySI", true));
        assert_eq!(
            parse_go_quantity("128Mi"),
            int(128 << 20, 0, "BinarySI", false)
        );
        assert_eq!(parse_go_quantity("2"), int(2, 0, "DecimalSI", true));
        assert_eq!(parse_go_quantity("1000"), int(1000, 0, "DecimalSI", false));
        assert_eq!(parse_go_quantity("1k"), int(1, 3, "DecimalSI", true));
        assert_eq!(parse_go_quantity("0"), int(0, 0, "DecimalSI", true));
        assert_eq!(parse_go_quantity("x"), None);
        // Beyond 18 digits, or binary amounts of 2^50 and more: an inf.Dec in nano units.
        let dec = |negative, unscaled, format| {
            Some(GoQuantity::Dec {
                negative,
                unscaled,
                scale: 9,
                format,
            })
        };
        assert_eq!(
            parse_go_quantity("1Pi"),
            dec(false, (1 << 50) * 1_000_000_000, "BinarySI")
        );
        assert_eq!(
            parse_go_quantity("-1Pi"),
            dec(true, (1 << 50) * 1_000_000_000, "BinarySI")
        );
        assert_eq!(
            parse_go_quantity("0.5Ki"),
            dec(false, 512_000_000_000, "BinarySI")
        );
    }

    #[test]
    fn a_template_prints_as_go_spew_prints_the_go_struct() {
        // Printed by go-spew (ConfigState{Indent: " ", SortKeys, DisableMethods, SpewKeys},
        // "%#v") over k8s.io/api v0.33.9's v1.PodTemplateSpec decoded from the same JSON.
        let json: Value =
            serde_json::from_str(include_str!("deephash/testdata/nginx.json")).expect("json");
        let expected = include_str!("deephash/testdata/nginx.spew.txt").trim_end();
        assert_eq!(spew(POD_TEMPLATE_SPEC, &json), expected);
    }
}
