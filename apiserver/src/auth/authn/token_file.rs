//! The static token file (`--token-auth-file`): upstream's CSV `token,user,uid,"group1,group2"`
//! (`staging/src/k8s.io/apiserver/pkg/authentication/token/tokenfile`), read with Go's
//! `encoding/csv` rules. Tokens are kept only as SHA-256 digests and compared in constant time.

use std::path::{Path, PathBuf};

use super::constant_time_eq;
use crate::auth::UserInfo;

/// Why a token file could not be loaded. Messages carry the path and line, never a token.
#[derive(Debug, thiserror::Error)]
pub enum TokenFileError {
    #[error("token file '{}': {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("token file '{}': line {line}: the file is not valid UTF-8", path.display())]
    NotUtf8 { path: PathBuf, line: usize },
    /// A CSV syntax error, worded as Go's `encoding/csv`.
    #[error("token file '{}': {message}", path.display())]
    Csv { path: PathBuf, message: String },
    #[error(
        "token file '{}' must have at least 3 columns (token, user name, user uid), found {found} (line {line})",
        path.display()
    )]
    TooFewColumns {
        path: PathBuf,
        line: usize,
        found: usize,
    },
}

struct Entry {
    digest: [u8; 32],
    user: UserInfo,
}

/// The users of a token file.
pub struct TokenFile {
    entries: Vec<Entry>,
}

impl std::fmt::Debug for TokenFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenFile")
            .field("tokens", &self.entries.len())
            .finish()
    }
}

fn digest(token: &str) -> [u8; 32] {
    let d = ring::digest::digest(&ring::digest::SHA256, token.as_bytes());
    let mut out = [0u8; 32];
    out.copy_from_slice(d.as_ref());
    out
}

impl TokenFile {
    /// Reads and parses the file at `path`.
    pub fn load(path: impl AsRef<Path>) -> Result<TokenFile, TokenFileError> {
        let path = path.as_ref();
        let bytes = std::fs::read(path).map_err(|source| TokenFileError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        match String::from_utf8(bytes) {
            Ok(text) => Self::parse(&text, path),
            Err(e) => {
                let valid = &e.as_bytes()[..e.utf8_error().valid_up_to()];
                let line = 1 + valid.iter().filter(|b| **b == b'\n').count();
                Err(TokenFileError::NotUtf8 {
                    path: path.to_path_buf(),
                    line,
                })
            }
        }
    }

    /// Parses file contents; `path` only names the file in errors. Records need at least three
    /// columns (token, user name, uid); a fourth holds comma-separated groups; more are ignored.
    /// Records with an empty token are skipped; a repeated token keeps its last record.
    pub fn parse(contents: &str, path: &Path) -> Result<TokenFile, TokenFileError> {
        let contents = contents.strip_prefix('\u{feff}').unwrap_or(contents);
        let records = read_csv(contents).map_err(|message| TokenFileError::Csv {
            path: path.to_path_buf(),
            message,
        })?;
        let mut entries: Vec<Entry> = Vec::new();
        for (line, record) in records {
            if record.len() < 3 {
                return Err(TokenFileError::TooFewColumns {
                    path: path.to_path_buf(),
                    line,
                    found: record.len(),
                });
            }
            if record[0].is_empty() {
                tracing::warn!(path = %path.display(), line, "empty token in token file");
                continue;
            }
            let groups = record
                .get(3)
                .map(|g| {
                    g.split(',')
                        .filter(|s| !s.is_empty())
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default();
            let entry = Entry {
                digest: digest(&record[0]),
                user: UserInfo {
                    name: record[1].clone(),
                    uid: record[2].clone(),
                    groups,
                    ..Default::default()
                },
            };
            if let Some(old) = entries.iter_mut().find(|e| e.digest == entry.digest) {
                tracing::warn!(path = %path.display(), line, "duplicate token in token file");
                *old = entry;
            } else {
                entries.push(entry);
            }
        }
        Ok(TokenFile { entries })
    }

    /// The user of `token`, with `system:authenticated` added as upstream's group adder does.
    /// Every entry is compared, in constant time, whatever matches.
    pub fn authenticate(&self, token: &str) -> Option<UserInfo> {
        if token.is_empty() {
            return None;
        }
        let wanted = digest(token);
        let mut found = None;
        for e in &self.entries {
            if constant_time_eq(&e.digest, &wanted) {
                found = Some(&e.user);
            }
        }
        found.map(|u| {
            let mut user = u.clone();
            if !user.groups.iter().any(|g| g == "system:authenticated") {
                user.groups.push("system:authenticated".into());
            }
            user
        })
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

const ERR_BARE_QUOTE: &str = "bare \" in non-quoted-field";
const ERR_QUOTE: &str = "extraneous or missing \" in quoted-field";

fn parse_error(start_line: usize, line: usize, column: usize, err: &str) -> String {
    if start_line != line {
        format!("record on line {start_line}; parse error on line {line}, column {column}: {err}")
    } else {
        format!("parse error on line {line}, column {column}: {err}")
    }
}

/// Go `encoding/csv` with `FieldsPerRecord = -1`: comma-separated, `"`-quoted fields with `""`
/// escapes and embedded newlines, `\r\n` read as `\n`, blank lines skipped, no comments, no
/// trimming. Returns (starting line, fields) per record.
fn read_csv(text: &str) -> Result<Vec<(usize, Vec<String>)>, String> {
    let lines: Vec<&str> = text
        .split_inclusive('\n')
        .map(|l| {
            l.strip_suffix("\r\n")
                .or_else(|| l.strip_suffix('\n'))
                .unwrap_or(l)
        })
        .collect();
    let mut records = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let start_line = i + 1;
        if lines[i].is_empty() {
            i += 1;
            continue;
        }
        let mut fields = Vec::new();
        let mut line_no = start_line;
        let mut rest: &str = lines[i];
        let mut col_base = 0usize;
        loop {
            if let Some(after_quote) = rest.strip_prefix('"') {
                // Quoted field, possibly spanning lines.
                let mut field = String::new();
                let mut cur = after_quote;
                let mut col = col_base + 2;
                loop {
                    match cur.find('"') {
                        Some(pos) => {
                            field.push_str(&cur[..pos]);
                            col += cur[..pos].chars().count();
                            let after = &cur[pos + 1..];
                            if let Some(next) = after.strip_prefix('"') {
                                field.push('"');
                                cur = next;
                                col += 2;
                            } else if let Some(next) = after.strip_prefix(',') {
                                fields.push(std::mem::take(&mut field));
                                col_base = col + 1;
                                rest = next;
                                break;
                            } else if after.is_empty() {
                                fields.push(std::mem::take(&mut field));
                                rest = "";
                                col_base = usize::MAX;
                                break;
                            } else {
                                return Err(parse_error(start_line, line_no, col + 1, ERR_QUOTE));
                            }
                        }
                        None => {
                            field.push_str(cur);
                            if line_no >= lines.len() {
                                let col = col + cur.chars().count();
                                return Err(parse_error(start_line, line_no, col, ERR_QUOTE));
                            }
                            field.push('\n');
                            cur = lines[line_no];
                            line_no += 1;
                            col = 1;
                        }
                    }
                }
                if col_base == usize::MAX {
                    break;
                }
            } else {
                let (field, next) = match rest.find(',') {
                    Some(pos) => (&rest[..pos], Some(&rest[pos + 1..])),
                    None => (rest, None),
                };
                if let Some(q) = field.find('"') {
                    let col = col_base + field[..q].chars().count() + 1;
                    return Err(parse_error(start_line, line_no, col, ERR_BARE_QUOTE));
                }
                fields.push(field.to_string());
                match next {
                    Some(next) => {
                        col_base += field.chars().count() + 1;
                        rest = next;
                    }
                    None => break,
                }
            }
        }
        records.push((start_line, fields));
        i = line_no;
    }
    Ok(records)
}
