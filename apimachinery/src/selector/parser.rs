//! Lexer and recursive-descent parser for label selector strings, with upstream's grammar and
//! error messages (`k8s.io/apimachinery/pkg/labels` `Parse`).

use super::SelectorError;
use super::label::{Operator, Requirement};
use crate::status::FieldError;
use crate::validation::is_qualified_name;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tok {
    End,
    ClosedPar,
    Comma,
    DoesNotExist,
    DoubleEquals,
    Equals,
    GreaterThan,
    Identifier,
    In,
    LessThan,
    NotEquals,
    NotIn,
    OpenPar,
}

fn keyword(s: &str) -> Option<Tok> {
    Some(match s {
        ")" => Tok::ClosedPar,
        "," => Tok::Comma,
        "!" => Tok::DoesNotExist,
        "==" => Tok::DoubleEquals,
        "=" => Tok::Equals,
        ">" => Tok::GreaterThan,
        "in" => Tok::In,
        "<" => Tok::LessThan,
        "!=" => Tok::NotEquals,
        "notin" => Tok::NotIn,
        "(" => Tok::OpenPar,
        _ => return None,
    })
}

fn is_whitespace(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\r' | b'\n')
}

fn is_special(c: u8) -> bool {
    matches!(c, b'=' | b'!' | b'(' | b')' | b',' | b'>' | b'<')
}

/// Splits the input into tokens; always ends with `End`.
fn lex(s: &str) -> Vec<(Tok, &str)> {
    let b = s.as_bytes();
    let mut pos = 0;
    let mut out = Vec::new();
    loop {
        while pos < b.len() && is_whitespace(b[pos]) {
            pos += 1;
        }
        if pos >= b.len() {
            out.push((Tok::End, ""));
            return out;
        }
        let start = pos;
        if is_special(b[pos]) {
            // Longest run of special characters that still forms a token.
            let mut best: Option<(Tok, usize)> = None;
            while pos < b.len() && is_special(b[pos]) {
                match keyword(&s[start..=pos]) {
                    Some(tok) => best = Some((tok, pos + 1)),
                    None if best.is_some() => break,
                    None => {}
                }
                pos += 1;
            }
            // Every single special character is a token, so `best` is always set.
            let (tok, end) = best.unwrap_or((Tok::End, pos));
            out.push((tok, &s[start..end]));
            pos = end;
        } else {
            while pos < b.len() && !is_special(b[pos]) && !is_whitespace(b[pos]) {
                pos += 1;
            }
            let lit = &s[start..pos];
            out.push((keyword(lit).unwrap_or(Tok::Identifier), lit));
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Ctx {
    KeyAndOperator,
    Values,
}

struct Parser<'a> {
    items: Vec<(Tok, &'a str)>,
    pos: usize,
}

type PResult<T> = Result<T, String>;

impl<'a> Parser<'a> {
    fn adjust(tok: Tok, ctx: Ctx) -> Tok {
        if ctx == Ctx::Values && matches!(tok, Tok::In | Tok::NotIn) {
            Tok::Identifier
        } else {
            tok
        }
    }

    fn lookahead(&self, ctx: Ctx) -> (Tok, &'a str) {
        let (tok, lit) = self.items.get(self.pos).copied().unwrap_or((Tok::End, ""));
        (Self::adjust(tok, ctx), lit)
    }

    fn consume(&mut self, ctx: Ctx) -> (Tok, &'a str) {
        let item = self.lookahead(ctx);
        if self.pos < self.items.len() {
            self.pos += 1;
        }
        item
    }

    fn parse(&mut self) -> PResult<Vec<Requirement>> {
        let mut reqs = Vec::new();
        loop {
            let (tok, lit) = self.lookahead(Ctx::Values);
            match tok {
                Tok::Identifier | Tok::DoesNotExist => {
                    let r = self
                        .parse_requirement()
                        .map_err(|e| format!("unable to parse requirement: {e}"))?;
                    reqs.push(r);
                    let (t, l) = self.consume(Ctx::Values);
                    match t {
                        Tok::End => return Ok(reqs),
                        Tok::Comma => {
                            let (t2, l2) = self.lookahead(Ctx::Values);
                            if t2 != Tok::Identifier && t2 != Tok::DoesNotExist {
                                return Err(format!(
                                    "found '{l2}', expected: identifier after ','"
                                ));
                            }
                        }
                        _ => {
                            return Err(format!("found '{l}', expected: ',' or 'end of string'"));
                        }
                    }
                }
                Tok::End => return Ok(reqs),
                _ => {
                    return Err(format!(
                        "found '{lit}', expected: !, identifier, or 'end of string'"
                    ));
                }
            }
        }
    }

    fn parse_requirement(&mut self) -> PResult<Requirement> {
        let (key, unary) = self.parse_key_and_infer_operator()?;
        if let Some(op) = unary {
            return Requirement::new(key, op, Vec::new()).map_err(|e| e.message().to_string());
        }
        let op = self.parse_operator()?;
        let values = match op {
            Operator::In | Operator::NotIn => self.parse_values()?,
            _ => self.parse_exact_value()?,
        };
        Requirement::new(key, op, values).map_err(|e| e.message().to_string())
    }

    fn parse_key_and_infer_operator(&mut self) -> PResult<(String, Option<Operator>)> {
        let mut op = None;
        let (mut tok, mut lit) = self.consume(Ctx::Values);
        if tok == Tok::DoesNotExist {
            op = Some(Operator::DoesNotExist);
            (tok, lit) = self.consume(Ctx::Values);
        }
        if tok != Tok::Identifier {
            return Err(format!("found '{lit}', expected: identifier"));
        }
        let errs = is_qualified_name(lit);
        if !errs.is_empty() {
            // Upstream validates the key here with a nil field path, printed as `<nil>`.
            return Err(FieldError::invalid("<nil>", lit, errs.join("; ")).to_string());
        }
        let (next, _) = self.lookahead(Ctx::Values);
        if (next == Tok::End || next == Tok::Comma) && op.is_none() {
            op = Some(Operator::Exists);
        }
        Ok((lit.to_string(), op))
    }

    fn parse_operator(&mut self) -> PResult<Operator> {
        let (tok, lit) = self.consume(Ctx::KeyAndOperator);
        Ok(match tok {
            Tok::In => Operator::In,
            Tok::Equals => Operator::Equals,
            Tok::DoubleEquals => Operator::DoubleEquals,
            Tok::GreaterThan => Operator::GreaterThan,
            Tok::LessThan => Operator::LessThan,
            Tok::NotIn => Operator::NotIn,
            Tok::NotEquals => Operator::NotEquals,
            _ => {
                return Err(format!(
                    "found '{lit}', expected: in, notin, =, ==, !=, gt, lt"
                ));
            }
        })
    }

    fn parse_values(&mut self) -> PResult<Vec<String>> {
        let (tok, lit) = self.consume(Ctx::Values);
        if tok != Tok::OpenPar {
            return Err(format!("found '{lit}' expected: '('"));
        }
        let (tok, lit) = self.lookahead(Ctx::Values);
        match tok {
            Tok::Identifier | Tok::Comma => {
                let set = self.parse_identifiers_list()?;
                let (tok, _) = self.consume(Ctx::Values);
                if tok != Tok::ClosedPar {
                    return Err(format!("found '{lit}', expected: ')'"));
                }
                Ok(set)
            }
            Tok::ClosedPar => {
                self.consume(Ctx::Values);
                Ok(vec![String::new()])
            }
            _ => Err(format!("found '{lit}', expected: ',', ')' or identifier")),
        }
    }

    /// A possibly empty comma-separated list of possibly empty values, sorted and unique.
    fn parse_identifiers_list(&mut self) -> PResult<Vec<String>> {
        let mut set = std::collections::BTreeSet::new();
        loop {
            let (tok, lit) = self.consume(Ctx::Values);
            match tok {
                Tok::Identifier => {
                    set.insert(lit.to_string());
                    let (tok2, lit2) = self.lookahead(Ctx::Values);
                    match tok2 {
                        Tok::Comma => continue,
                        Tok::ClosedPar => return Ok(set.into_iter().collect()),
                        _ => return Err(format!("found '{lit2}', expected: ',' or ')'")),
                    }
                }
                Tok::Comma => {
                    if set.is_empty() {
                        set.insert(String::new());
                    }
                    let (tok2, _) = self.lookahead(Ctx::Values);
                    if tok2 == Tok::ClosedPar {
                        set.insert(String::new());
                        return Ok(set.into_iter().collect());
                    }
                    if tok2 == Tok::Comma {
                        self.consume(Ctx::Values);
                        set.insert(String::new());
                    }
                }
                _ => return Err(format!("found '{lit}', expected: ',', or identifier")),
            }
        }
    }

    fn parse_exact_value(&mut self) -> PResult<Vec<String>> {
        let (tok, _) = self.lookahead(Ctx::Values);
        if tok == Tok::End || tok == Tok::Comma {
            return Ok(vec![String::new()]);
        }
        let (tok, lit) = self.consume(Ctx::Values);
        if tok == Tok::Identifier {
            Ok(vec![lit.to_string()])
        } else {
            Err(format!("found '{lit}', expected: identifier"))
        }
    }
}

/// Parses a selector string into its requirements, in input order.
pub(super) fn parse(s: &str) -> Result<Vec<Requirement>, SelectorError> {
    let mut p = Parser {
        items: lex(s),
        pos: 0,
    };
    p.parse().map_err(SelectorError::new)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lexes_operators_greedily() {
        let toks: Vec<Tok> = lex("a!=b,c==d,!e,f in (g),h notin(i)")
            .into_iter()
            .map(|t| t.0)
            .collect();
        assert_eq!(
            toks,
            vec![
                Tok::Identifier,
                Tok::NotEquals,
                Tok::Identifier,
                Tok::Comma,
                Tok::Identifier,
                Tok::DoubleEquals,
                Tok::Identifier,
                Tok::Comma,
                Tok::DoesNotExist,
                Tok::Identifier,
                Tok::Comma,
                Tok::Identifier,
                Tok::In,
                Tok::OpenPar,
                Tok::Identifier,
                Tok::ClosedPar,
                Tok::Comma,
                Tok::Identifier,
                Tok::NotIn,
                Tok::OpenPar,
                Tok::Identifier,
                Tok::ClosedPar,
                Tok::End,
            ]
        );
        assert_eq!(lex("a===b")[1], (Tok::DoubleEquals, "=="));
        assert_eq!(lex("a===b")[2], (Tok::Equals, "="));
        assert_eq!(lex("  ")[0], (Tok::End, ""));
    }
}
