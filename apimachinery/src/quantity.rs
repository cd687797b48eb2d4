//! An exact resource `Quantity` (upstream's resource.Quantity): parsing of decimal, binary and
//! exponent suffixes, arithmetic in nano-units, and upstream's canonical string form.

use std::cmp::Ordering;
use std::fmt;

/// resource.ParseQuantity's error for any malformed quantity (what upstream's decoder returns).
pub const FORMAT_ERROR: &str =
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";

/// How a quantity was written; decides its canonical rendering.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    DecimalSI,
    BinarySI,
    DecimalExponent,
}

/// An exact quantity, held as a count of 10^-9 units (fractions beyond nano round up, as
/// upstream does).
#[derive(Clone, Copy, Debug)]
pub struct Quantity {
    nanos: i128,
    format: Format,
}

const NANO: i128 = 1_000_000_000;

impl PartialEq for Quantity {
    fn eq(&self, other: &Self) -> bool {
        self.nanos == other.nanos
    }
}
impl Eq for Quantity {}
impl PartialOrd for Quantity {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Quantity {
    fn cmp(&self, other: &Self) -> Ordering {
        self.nanos.cmp(&other.nanos)
    }
}

fn pow10(exp: u32) -> Option<i128> {
    10i128.checked_pow(exp)
}

impl Quantity {
    pub fn zero() -> Self {
        Quantity {
            nanos: 0,
            format: Format::DecimalSI,
        }
    }

    /// An integer count (`pods=1`).
    pub fn from_int(v: i64) -> Self {
        Quantity {
            nanos: i128::from(v) * NANO,
            format: Format::DecimalSI,
        }
    }

    /// Parses `1`, `0.5`, `500m`, `1Gi`, `1e3`, `-2k`; `None` when malformed or out of range.
    pub fn parse(s: &str) -> Option<Self> {
        let (negative, rest) = match s.as_bytes().first()? {
            b'-' => (true, &s[1..]),
            b'+' => (false, &s[1..]),
            _ => (false, s),
        };
        let num_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let (number, suffix) = rest.split_at(num_len);
        let (int_part, frac_part) = match number.split_once('.') {
            Some((i, f)) => (i, f),
            None => (number, ""),
        };
        if (int_part.is_empty() && frac_part.is_empty()) || frac_part.contains('.') {
            return None;
        }
        let digits = format!("{int_part}{frac_part}");
        let digits = digits.trim_start_matches('0');
        if digits.len() > 36 {
            return None;
        }
        let mantissa: i128 = if digits.is_empty() {
            0
        } else {
            digits.parse().ok()?
        };
        let (exp10, binary_shift, format): (i64, u32, Format) = match suffix {
            "" => (0, 0, Format::DecimalSI),
            "n" => (-9, 0, Format::DecimalSI),
            "u" => (-6, 0, Format::DecimalSI),
            "m" => (-3, 0, Format::DecimalSI),
            "k" => (3, 0, Format::DecimalSI),
            "M" => (6, 0, Format::DecimalSI),
            "G" => (9, 0, Format::DecimalSI),
            "T" => (12, 0, Format::DecimalSI),
            "P" => (15, 0, Format::DecimalSI),
            "E" => (18, 0, Format::DecimalSI),
            "Ki" => (0, 10, Format::BinarySI),
            "Mi" => (0, 20, Format::BinarySI),
            "Gi" => (0, 30, Format::BinarySI),
            "Ti" => (0, 40, Format::BinarySI),
            "Pi" => (0, 50, Format::BinarySI),
            "Ei" => (0, 60, Format::BinarySI),
            other => {
                let exp = other.strip_prefix(['e', 'E'])?;
                let body = exp.strip_prefix(['+', '-']).unwrap_or(exp);
                if body.is_empty() || !body.bytes().all(|b| b.is_ascii_digit()) || body.len() > 4 {
                    return None;
                }
                (exp.parse().ok()?, 0, Format::DecimalExponent)
            }
        };
        // nanos = mantissa * 10^(exp10 - frac_len + 9) * 2^binary_shift
        let scale = exp10 - frac_part.len() as i64 + 9;
        let scaled = mantissa.checked_mul(1i128.checked_shl(binary_shift)?)?;
        let nanos = if scale >= 0 {
            scaled.checked_mul(pow10(u32::try_from(scale).ok()?)?)?
        } else {
            let div = pow10(u32::try_from(-scale).ok()?).unwrap_or(i128::MAX);
            let q = scaled / div;
            if scaled % div != 0 { q + 1 } else { q }
        };
        if nanos > i128::from(i64::MAX) * NANO {
            return None;
        }
        Some(Quantity {
            nanos: if negative { -nanos } else { nanos },
            format,
        })
    }

    pub fn is_zero(&self) -> bool {
        self.nanos == 0
    }

    pub fn is_negative(&self) -> bool {
        self.nanos < 0
    }

    /// The format a sum keeps: the receiver's, unless it is zero (as upstream's `Add`).
    fn sum_format(&self, other: &Quantity) -> Format {
        if self.nanos == 0 {
            other.format
        } else {
            self.format
        }
    }

    /// The sum, in the receiver's format (as upstream's `Add`).
    pub fn add(&self, other: &Quantity) -> Quantity {
        Quantity {
            nanos: self.nanos.saturating_add(other.nanos),
            format: self.sum_format(other),
        }
    }

    pub fn sub(&self, other: &Quantity) -> Quantity {
        Quantity {
            nanos: self.nanos.saturating_sub(other.nanos),
            format: self.sum_format(other),
        }
    }

    pub fn neg(&self) -> Quantity {
        Quantity {
            nanos: -self.nanos,
            format: self.format,
        }
    }

    /// The value in milli-units, rounded up.
    pub fn milli_value(&self) -> i128 {
        div_ceil(self.nanos, 1_000_000)
    }

    /// The value in whole units, rounded up.
    pub fn value(&self) -> i128 {
        div_ceil(self.nanos, NANO)
    }

    /// The value as a float (for ratios).
    pub fn as_f64(&self) -> f64 {
        self.nanos as f64 / NANO as f64
    }
}

fn div_ceil(a: i128, b: i128) -> i128 {
    let q = a / b;
    if a % b != 0 && a > 0 { q + 1 } else { q }
}

impl fmt::Display for Quantity {
    /// Upstream's canonical form: `500m`, `1`, `2k`, `1Gi`, `1536Mi`, `1e3`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.nanos == 0 {
            return f.write_str("0");
        }
        if self.format == Format::BinarySI && self.nanos % NANO == 0 {
            let units = self.nanos / NANO;
            if units.abs() >= 1024 {
                const SUFFIXES: [&str; 7] = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"];
                let mut value = units;
                let mut idx = 0;
                while idx < 6 && value % 1024 == 0 {
                    value /= 1024;
                    idx += 1;
                }
                return write!(f, "{value}{}", SUFFIXES[idx]);
            }
        }
        // Largest exponent (a multiple of 3, from -9 to 18) leaving an integer mantissa.
        let mut exp: i32 = -9;
        let mut mantissa = self.nanos;
        while exp < 18 && mantissa % 1000 == 0 {
            mantissa /= 1000;
            exp += 3;
        }
        if self.format == Format::DecimalExponent {
            return if exp == 0 {
                write!(f, "{mantissa}")
            } else {
                write!(f, "{mantissa}e{exp}")
            };
        }
        let suffix = match exp {
            -9 => "n",
            -6 => "u",
            -3 => "m",
            3 => "k",
            6 => "M",
            9 => "G",
            12 => "T",
            15 => "P",
            18 => "E",
            _ => "",
        };
        write!(f, "{mantissa}{suffix}")
    }
}

#[cfg(test)]
mod tests {
    use super::Quantity;

    fn canon(s: &str) -> String {
        Quantity::parse(s)
            .map(|q| q.to_string())
            .unwrap_or_else(|| "ERR".into())
    }

    #[test]
    fn canonical_forms() {
        for (input, want) in [
            ("1", "1"),
            ("0.5", "500m"),
            ("500m", "500m"),
            ("1000m", "1"),
            ("1000", "1k"),
            ("1500", "1500"),
            ("1Gi", "1Gi"),
            ("1024Mi", "1Gi"),
            ("1.5Gi", "1536Mi"),
            ("0.5Ki", "512"),
            ("100Mi", "100Mi"),
            ("1e3", "1e3"),
            ("0", "0"),
            ("-2k", "-2k"),
            ("128974848", "128974848"),
            ("129e6", "129e6"),
            ("123Mi", "123Mi"),
            ("1.1n", "2n"),
        ] {
            assert_eq!(canon(input), want, "{input}");
        }
    }

    #[test]
    fn rejects_malformed() {
        for bad in ["", "abc", "1x", "1.2.3", "--1", "1e", "Gi", "."] {
            assert!(Quantity::parse(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn arithmetic() {
        let a = Quantity::parse("1").unwrap_or_else(Quantity::zero);
        let b = Quantity::parse("500m").unwrap_or_else(Quantity::zero);
        assert_eq!(a.add(&b).to_string(), "1500m");
        assert_eq!(a.sub(&b).to_string(), "500m");
        assert!(b < a);
        assert_eq!(b.milli_value(), 500);
        assert_eq!(b.value(), 1);
        let gi = Quantity::parse("1Gi").unwrap_or_else(Quantity::zero);
        assert_eq!(gi.add(&gi).to_string(), "2Gi");
    }
}
