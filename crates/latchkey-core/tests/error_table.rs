//! Keeps `docs/design.md`'s table "Spec errors and where they are raised" and the code in agreement: every
//! function the table names exists in the file it names, and that file names the error code; every `ErrorCode`
//! variant has a row.

use latchkey_core::ErrorCode;
use std::path::Path;

/// The workspace's root.
fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().and_then(Path::parent).expect("workspace root")
}

/// The table's rows: (code, raised-by cell).
fn rows() -> Vec<(String, String)> {
    let design = std::fs::read_to_string(root().join("docs/design.md")).expect("docs/design.md");
    let start = design.find("## Spec errors and where they are raised").expect("the table's section");
    design[start..]
        .lines()
        .skip_while(|l| !l.starts_with("| Spec table"))
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .map(|l| {
            let cells: Vec<&str> = l.trim_matches('|').split('|').map(str::trim).collect();
            assert_eq!(cells.len(), 4, "four cells: {l}");
            (cells[1].to_owned(), cells[3].to_owned())
        })
        .collect()
}

/// The ways a file may name a code: its wire name, or its variant (`InvalidGrant`).
fn names_code(text: &str, code: &str) -> bool {
    let variant: String = code.split('_').map(|w| w[..1].to_uppercase() + &w[1..]).collect::<Vec<_>>().concat();
    text.contains(code) || text.contains(&variant)
}

#[test]
fn every_named_function_exists_and_its_file_names_the_code() {
    let rows = rows();
    assert!(rows.len() >= 14, "the error tables' rows are there ({} rows)", rows.len());
    for (code, raised_by) in &rows {
        if raised_by.starts_with("not yet: issue ") || raised_by == "not raised" {
            continue;
        }
        for place in raised_by.split(", ") {
            let (path, function) = place.rsplit_once("::").unwrap_or_else(|| panic!("path::function: {place}"));
            let text = std::fs::read_to_string(root().join(path)).unwrap_or_else(|_| panic!("{path} exists"));
            assert!(text.contains(&format!("fn {function}(")) || text.contains(&format!("fn {function}<")), "{place}");
            if ErrorCode::parse(code).is_some() {
                assert!(names_code(&text, code), "{path} names {code}");
            }
        }
    }
}

#[test]
fn every_error_code_has_a_row() {
    let source = std::fs::read_to_string(root().join("crates/latchkey-proto/src/error_code.rs")).expect("source");
    let rows = rows();
    let body = &source[source.find("pub enum ErrorCode {").expect("the enum")..];
    let body = &body[..body.find('}').expect("its end")];
    let variants = body.lines().map(str::trim).filter(|l| l.ends_with(',') && !l.starts_with("//"));
    let mut seen = 0;
    for variant in variants {
        let name = variant.trim_end_matches(',');
        let code = rows
            .iter()
            .map(|(c, _)| c.as_str())
            .find(|c| ErrorCode::parse(c).is_some_and(|e| format!("{e:?}") == name));
        assert!(code.is_some(), "ErrorCode::{name} has a row in docs/design.md");
        seen += 1;
    }
    assert_eq!(seen, 29, "every variant was read");
}

#[test]
fn the_organisation_codes_are_raised() {
    for (code, raised_by) in rows() {
        if code == "org_internal" || code == "admin_policy_enforced" {
            assert!(raised_by.contains("org.rs::decide"), "{code} is raised by the organisation checks: {raised_by}");
        }
    }
}
