//! Field selectors (`metadata.name=foo,status.phase!=Running`) with upstream's escaping
//! (`\,` `\=` `\\`) and messages (`k8s.io/apimachinery/pkg/fields`).

use std::collections::BTreeMap;
use std::fmt;

use super::SelectorError;

/// `=`/`==` (equal) or `!=` (not equal).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FieldOperator {
    Equals,
    NotEquals,
}

/// One `field op value` term; the value is unescaped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldRequirement {
    pub field: String,
    pub operator: FieldOperator,
    pub value: String,
}

impl FieldRequirement {
    fn matches(&self, actual: &str) -> bool {
        match self.operator {
            FieldOperator::Equals => actual == self.value,
            FieldOperator::NotEquals => actual != self.value,
        }
    }
}

impl fmt::Display for FieldRequirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let op = match self.operator {
            FieldOperator::Equals => "=",
            FieldOperator::NotEquals => "!=",
        };
        write!(f, "{}{op}{}", self.field, escape_value(&self.value))
    }
}

/// A field selector: the AND of its terms. The empty selector matches everything.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FieldSelector {
    requirements: Vec<FieldRequirement>,
}

/// Escapes `\`, `,` and `=` in a value for use in a field selector (upstream `EscapeValue`).
pub fn escape_value(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if matches!(c, '\\' | ',' | '=') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// Reverses [`escape_value`]; unescaped `,`/`=` and unknown escapes are errors, as upstream.
pub fn unescape_value(s: &str) -> Result<String, SelectorError> {
    if !s.contains(['\\', ',', '=']) {
        return Ok(s.to_string());
    }
    let mut out = String::with_capacity(s.len());
    let mut in_slash = false;
    for c in s.chars() {
        if in_slash {
            match c {
                '\\' | ',' | '=' => out.push(c),
                other => {
                    return Err(SelectorError::new(format!(
                        "invalid field selector: invalid escape sequence: \\{other}"
                    )));
                }
            }
            in_slash = false;
            continue;
        }
        match c {
            '\\' => in_slash = true,
            ',' | '=' => {
                // Upstream prints the rune with %v, i.e. as its code point number.
                return Err(SelectorError::new(format!(
                    "invalid field selector: unescaped character in value: {}",
                    c as u32
                )));
            }
            other => out.push(other),
        }
    }
    if in_slash {
        return Err(SelectorError::new(
            "invalid field selector: invalid escape sequence: \\",
        ));
    }
    Ok(out)
}

/// Splits on commas not escaped by a backslash; escapes are kept in the terms.
fn split_terms(s: &str) -> Vec<&str> {
    if s.is_empty() {
        return Vec::new();
    }
    let mut terms = Vec::new();
    let mut start = 0;
    let mut in_slash = false;
    for (i, c) in s.char_indices() {
        if in_slash {
            in_slash = false;
        } else if c == '\\' {
            in_slash = true;
        } else if c == ',' {
            terms.push(&s[start..i]);
            start = i + 1;
        }
    }
    terms.push(&s[start..]);
    terms
}

/// Splits a term at the first operator (`!=`, then `==`, then `=` at each position).
fn split_term(term: &str) -> Option<(&str, FieldOperator, &str)> {
    for (i, _) in term.char_indices() {
        let rest = &term[i..];
        if let Some(rhs) = rest.strip_prefix("!=") {
            return Some((&term[..i], FieldOperator::NotEquals, rhs));
        }
        if let Some(rhs) = rest.strip_prefix("==") {
            return Some((&term[..i], FieldOperator::Equals, rhs));
        }
        if let Some(rhs) = rest.strip_prefix('=') {
            return Some((&term[..i], FieldOperator::Equals, rhs));
        }
    }
    None
}

impl FieldSelector {
    /// Matches everything.
    pub fn everything() -> Self {
        Self::default()
    }

    /// Parses `a=b`, `a==b`, `a!=b`, comma separated; `""` is everything. Terms are sorted as
    /// upstream does.
    pub fn parse(s: &str) -> Result<Self, SelectorError> {
        let mut parts = split_terms(s);
        parts.sort_unstable();
        let mut requirements = Vec::with_capacity(parts.len());
        for part in parts {
            if part.is_empty() {
                continue;
            }
            let Some((field, operator, raw)) = split_term(part) else {
                return Err(SelectorError::new(format!(
                    "invalid selector: '{s}'; can't understand '{part}'"
                )));
            };
            requirements.push(FieldRequirement {
                field: field.to_string(),
                operator,
                value: unescape_value(raw)?,
            });
        }
        Ok(Self { requirements })
    }

    /// A selector with the single term `field=value`.
    pub fn one_term_equal(field: impl Into<String>, value: impl Into<String>) -> Self {
        Self {
            requirements: vec![FieldRequirement {
                field: field.into(),
                operator: FieldOperator::Equals,
                value: value.into(),
            }],
        }
    }

    /// The AND of two selectors.
    pub fn and(mut self, other: FieldSelector) -> Self {
        self.requirements.extend(other.requirements);
        self
    }

    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    pub fn requirements(&self) -> &[FieldRequirement] {
        &self.requirements
    }

    /// The distinct field names used, in order of first use.
    pub fn fields(&self) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        for r in &self.requirements {
            if !out.contains(&r.field.as_str()) {
                out.push(&r.field);
            }
        }
        out
    }

    /// Fails with upstream's `field label not supported: <name>` for the first field not in
    /// `supported`.
    pub fn check_supported(&self, supported: &[&str]) -> Result<(), SelectorError> {
        match self
            .requirements
            .iter()
            .find(|r| !supported.contains(&r.field.as_str()))
        {
            Some(r) => Err(SelectorError::new(format!(
                "field label not supported: {}",
                r.field
            ))),
            None => Ok(()),
        }
    }

    /// The value `field` must equal for this selector to match, if a term pins it (`field=v`).
    pub fn requires_exact_match(&self, field: &str) -> Option<&str> {
        self.requirements
            .iter()
            .find(|r| r.field == field && r.operator == FieldOperator::Equals)
            .map(|r| r.value.as_str())
    }

    /// True when every term holds; `get_field` returns a field's value (absent reads as `""`).
    pub fn matches(&self, get_field: impl Fn(&str) -> Option<String>) -> bool {
        self.requirements.iter().all(|r| {
            let actual = get_field(&r.field).unwrap_or_default();
            r.matches(&actual)
        })
    }

    /// Matches against a precomputed field set (upstream `fields.Set`).
    pub fn matches_map(&self, fields: &BTreeMap<String, String>) -> bool {
        self.requirements
            .iter()
            .all(|r| r.matches(fields.get(&r.field).map(String::as_str).unwrap_or("")))
    }
}

impl fmt::Display for FieldSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, r) in self.requirements.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{r}")?;
        }
        Ok(())
    }
}

impl std::str::FromStr for FieldSelector {
    type Err = SelectorError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn pod_fields(name: &str) -> Option<String> {
        match name {
            "metadata.name" => Some("web-1".to_string()),
            "metadata.namespace" => Some("default".to_string()),
            "status.phase" => Some("Running".to_string()),
            "spec.nodeName" => Some("a,b=c".to_string()),
            _ => None,
        }
    }

    #[test]
    fn parses_operators() {
        let s = FieldSelector::parse("metadata.name=web-1").unwrap();
        assert!(s.matches(pod_fields));
        assert_eq!(s.requires_exact_match("metadata.name"), Some("web-1"));
        assert_eq!(s.to_string(), "metadata.name=web-1");
        let s = FieldSelector::parse("metadata.name==web-1").unwrap();
        assert!(s.matches(pod_fields));
        assert_eq!(s.to_string(), "metadata.name=web-1");
        let s = FieldSelector::parse("status.phase!=Running").unwrap();
        assert!(!s.matches(pod_fields));
        assert_eq!(s.requires_exact_match("status.phase"), None);
        assert_eq!(s.to_string(), "status.phase!=Running");
        let s = FieldSelector::parse("status.phase!=Pending,metadata.namespace=default").unwrap();
        assert!(s.matches(pod_fields));
        assert_eq!(s.fields(), vec!["metadata.namespace", "status.phase"]);
        assert_eq!(
            s.to_string(),
            "metadata.namespace=default,status.phase!=Pending"
        );
    }

    #[test]
    fn empty_and_missing() {
        let s = FieldSelector::parse("").unwrap();
        assert!(s.is_empty());
        assert!(s.matches(|_| None));
        assert_eq!(s.to_string(), "");
        let s = FieldSelector::parse("a=b,,").unwrap();
        assert_eq!(s.requirements().len(), 1);
        // Absent fields read as "".
        let s = FieldSelector::parse("spec.unknown=").unwrap();
        assert!(s.matches(pod_fields));
        let s = FieldSelector::parse("spec.unknown!=x").unwrap();
        assert!(s.matches(pod_fields));
        assert!(
            FieldSelector::parse("metadata.name=x")
                .unwrap()
                .matches_map(
                    &[("metadata.name".to_string(), "x".to_string())]
                        .into_iter()
                        .collect()
                )
        );
    }

    #[test]
    fn escaping() {
        let s = FieldSelector::parse(r"spec.nodeName=a\,b\=c").unwrap();
        assert_eq!(s.requirements()[0].value, "a,b=c");
        assert!(s.matches(pod_fields));
        assert_eq!(s.to_string(), r"spec.nodeName=a\,b\=c");
        let s = FieldSelector::parse(r"x=a\\b").unwrap();
        assert_eq!(s.requirements()[0].value, r"a\b");
        assert_eq!(escape_value(r"a\b,c=d"), r"a\\b\,c\=d");
        assert_eq!(unescape_value(&escape_value("x=,\\")).unwrap(), "x=,\\");
        assert_eq!(
            FieldSelector::parse(r"x=a\b").unwrap_err().to_string(),
            r"invalid field selector: invalid escape sequence: \b"
        );
        assert_eq!(
            FieldSelector::parse(r"x=a\").unwrap_err().to_string(),
            r"invalid field selector: invalid escape sequence: \"
        );
        assert_eq!(
            FieldSelector::parse("x=a=b").unwrap_err().to_string(),
            "invalid field selector: unescaped character in value: 61"
        );
    }

    #[test]
    fn errors() {
        assert_eq!(
            FieldSelector::parse("metadata.name")
                .unwrap_err()
                .to_string(),
            "invalid selector: 'metadata.name'; can't understand 'metadata.name'"
        );
        assert_eq!(
            FieldSelector::parse("a=b,c").unwrap_err().to_string(),
            "invalid selector: 'a=b,c'; can't understand 'c'"
        );
        let s = FieldSelector::parse("metadata.name=x,spec.foo=y").unwrap();
        assert_eq!(
            s.check_supported(&["metadata.name", "metadata.namespace"])
                .unwrap_err()
                .to_string(),
            "field label not supported: spec.foo"
        );
        assert!(s.check_supported(&["metadata.name", "spec.foo"]).is_ok());
    }

    #[test]
    fn operator_split_prefers_first_position() {
        let s = FieldSelector::parse("a!==b").unwrap_err();
        assert_eq!(
            s.to_string(),
            "invalid field selector: unescaped character in value: 61"
        );
        let s = FieldSelector::parse("a==b").unwrap();
        assert_eq!(s.requirements()[0].value, "b");
        let s = FieldSelector::parse("=b").unwrap();
        assert_eq!(s.requirements()[0].field, "");
    }

    #[test]
    fn combine() {
        let s = FieldSelector::one_term_equal("metadata.name", "web-1")
            .and(FieldSelector::parse("status.phase=Running").unwrap());
        assert!(s.matches(pod_fields));
        assert_eq!(s.to_string(), "metadata.name=web-1,status.phase=Running");
    }
}
