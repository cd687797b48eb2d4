//! Tests of the static token file.

use std::io::Write as _;
use std::path::Path;

use super::token_file::*;

fn parse(text: &str) -> Result<TokenFile, TokenFileError> {
    TokenFile::parse(text, Path::new("/etc/k1s/tokens.csv"))
}

#[test]
fn parses_upstream_format() {
    let file = parse(
        "token1,alice,uid-1,\"system:masters,dev\"\n\
         token2,bob,uid-2\r\n\
         \n\
         token3,carol,uid-3,ops,ignored,columns\n\
         \"tok,en4\",\"dave \"\"the\"\" admin\",uid-4,\"\"\n",
    )
    .expect("parse");
    assert_eq!(file.len(), 4);

    let alice = file.authenticate("token1").expect("alice");
    assert_eq!(alice.name, "alice");
    assert_eq!(alice.uid, "uid-1");
    assert_eq!(
        alice.groups,
        ["system:masters", "dev", "system:authenticated"]
    );

    let bob = file.authenticate("token2").expect("bob");
    assert_eq!((bob.name.as_str(), bob.uid.as_str()), ("bob", "uid-2"));
    assert_eq!(bob.groups, ["system:authenticated"]);

    assert_eq!(
        file.authenticate("token3").expect("carol").groups,
        ["ops", "system:authenticated"]
    );
    let dave = file.authenticate("tok,en4").expect("dave");
    assert_eq!(dave.name, "dave \"the\" admin");
    assert_eq!(dave.groups, ["system:authenticated"]);

    assert!(file.authenticate("token").is_none());
    assert!(file.authenticate("token11").is_none());
    assert!(file.authenticate("").is_none());
}

#[test]
fn duplicates_keep_the_last_record_and_empty_tokens_are_skipped() {
    let file = parse("t,first,1\n,nobody,0\nt,second,2\n").expect("parse");
    assert_eq!(file.len(), 1);
    assert_eq!(file.authenticate("t").expect("t").name, "second");
    assert!(file.authenticate("").is_none());
    assert!(parse("").expect("empty").is_empty());
}

#[test]
fn quoted_fields_may_span_lines() {
    let file = parse("\"multi\nline\",user,uid\nnext,u2,uid2\n").expect("parse");
    assert_eq!(
        file.authenticate("multi\nline").expect("multi").name,
        "user"
    );
    assert_eq!(file.authenticate("next").expect("next").name, "u2");
}

#[test]
fn bad_lines_are_reported_with_their_line() {
    let err = parse("a,b,c\n\nonly,two\n").expect_err("columns");
    assert_eq!(
        err.to_string(),
        "token file '/etc/k1s/tokens.csv' must have at least 3 columns (token, user name, user uid), found 2 (line 3)"
    );
    let err = parse("a,b,c\nto\"ken,u,1\n").expect_err("bare quote");
    assert_eq!(
        err.to_string(),
        "token file '/etc/k1s/tokens.csv': parse error on line 2, column 3: bare \" in non-quoted-field"
    );
    let err = parse("\"tok\"en,u,1\n").expect_err("extraneous quote");
    assert!(
        err.to_string()
            .contains("parse error on line 1, column 6: extraneous or missing \" in quoted-field"),
        "{err}"
    );
    let err = parse("a,b,c\n\"never closed,u,1\nmore\n").expect_err("unterminated");
    assert!(
        err.to_string()
            .contains("record on line 2; parse error on line 3"),
        "{err}"
    );
    let err = parse("a,b,c\n   \n").expect_err("whitespace line is a record");
    assert!(err.to_string().contains("found 1 (line 2)"), "{err}");
}

#[test]
fn load_reads_files_and_reports_missing_ones() {
    let mut f = tempfile::NamedTempFile::new().expect("tempfile");
    f.write_all(b"\xef\xbb\xbfsecret-token,admin,0,system:masters\n")
        .expect("write");
    let file = TokenFile::load(f.path()).expect("load");
    let user = file.authenticate("secret-token").expect("admin");
    assert_eq!(user.groups, ["system:masters", "system:authenticated"]);
    let dbg = format!("{file:?}");
    assert!(!dbg.contains("secret-token"), "{dbg}");

    let err = TokenFile::load("/nonexistent/k1s/tokens.csv").expect_err("missing");
    assert!(
        err.to_string()
            .starts_with("token file '/nonexistent/k1s/tokens.csv': "),
        "{err}"
    );

    let mut bad = tempfile::NamedTempFile::new().expect("tempfile");
    bad.write_all(b"a,b,c\n\xff,u,1\n").expect("write");
    let err = TokenFile::load(bad.path()).expect_err("utf8");
    assert!(
        err.to_string()
            .ends_with("line 2: the file is not valid UTF-8"),
        "{err}"
    );
}
