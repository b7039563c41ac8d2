//! The command line in a user's CI: inside GitHub Actions a leak prints workflow commands at the
//! line that created the leaked handle, appends a Markdown job summary that says what leaked and
//! where, and `--junit` writes a test case per judged signal with a failure for the leak; a
//! suppression file that accepts the leak makes the run pass and says so; a malformed one is exit
//! 2 naming its line. Each run is a process of its own.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

mod common;
use common::BIN;

/// The workspace's root: where the ledger's sites (`leak-tests/src/...`) are relative to, as a
/// repository's checkout is in GitHub Actions.
fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("the workspace").to_path_buf()
}

/// `leakcheck ARGS` as GitHub Actions runs it, its job summary going to `summary`.
fn in_actions(args: &[&str], summary: &Path) -> Output {
    Command::new(BIN)
        .args(args)
        .env_remove("LEAKCHECK_FAULTS")
        .env_remove("LEAKCHECK_TRACKING")
        .env("GITHUB_ACTIONS", "true")
        .env("GITHUB_STEP_SUMMARY", summary)
        .env("GITHUB_WORKSPACE", workspace())
        .output()
        .expect("run leakcheck")
}

/// A workflow command line: `::NAME key=value,..::message`, its properties unescaped.
fn command(line: &str) -> Option<(String, BTreeMap<String, String>, String)> {
    let rest = line.strip_prefix("::")?;
    let (head, message) = rest.split_once("::")?;
    let (name, props) = head.split_once(' ').unwrap_or((head, ""));
    let unescape = |s: &str| s.replace("%3A", ":").replace("%2C", ",").replace("%0A", "\n").replace("%25", "%");
    let props = props
        .split(',')
        .filter(|p| !p.is_empty())
        .filter_map(|p| p.split_once('='))
        .map(|(k, v)| (k.to_string(), unescape(v)))
        .collect();
    Some((name.to_string(), props, unescape(message)))
}

/// The job summary's headings and table rows (each a row of cell texts, code spans included).
fn markdown(text: &str) -> (Vec<String>, Vec<Vec<String>>) {
    use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};
    let (mut headings, mut rows) = (Vec::new(), Vec::new());
    let (mut in_heading, mut row, mut cell): (bool, Option<Vec<String>>, Option<String>) = (false, None, None);
    let mut heading = String::new();
    for event in Parser::new_ext(text, Options::ENABLE_TABLES) {
        match event {
            Event::Start(Tag::Heading { .. }) => (in_heading, heading) = (true, String::new()),
            Event::End(TagEnd::Heading(_)) => {
                in_heading = false;
                headings.push(heading.clone());
            }
            Event::Start(Tag::TableRow | Tag::TableHead) => row = Some(Vec::new()),
            Event::End(TagEnd::TableRow | TagEnd::TableHead) => rows.extend(row.take()),
            Event::Start(Tag::TableCell) => cell = Some(String::new()),
            Event::End(TagEnd::TableCell) => {
                if let (Some(r), Some(c)) = (row.as_mut(), cell.take()) {
                    r.push(c);
                }
            }
            Event::Text(t) | Event::Code(t) => {
                if in_heading {
                    heading.push_str(&t);
                }
                if let Some(c) = cell.as_mut() {
                    c.push_str(&t);
                }
            }
            _ => {}
        }
    }
    (headings, rows)
}

#[test]
fn a_leak_in_github_actions_lands_on_its_line_in_the_summary_and_in_junit() {
    let dir = tempfile::tempdir().expect("tempdir");
    let summary = dir.path().join("summary.md");
    let junit = dir.path().join("junit.xml");
    let junit_s = junit.to_str().expect("utf-8");
    let args =
        ["check", "--plant", "offsets-options-tracked", "--cycles", "30", "--max-cycles", "30", "--junit", junit_s];
    let out = in_actions(&args, &summary);
    assert_eq!(out.status.code(), Some(1), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8_lossy(&out.stdout);

    // The first lines are workflow commands; the first is the retained Options handles.
    let (name, props, message) = stdout.lines().next().and_then(command).expect("a workflow command first");
    assert_eq!(name, "error", "{stdout}");
    assert_eq!(props["title"], "leakcheck: live_handles.Options");
    assert!(message.contains("Options handle") && message.contains("retained, created at"), "{message}");
    let (file, line) = (&props["file"], props["line"].parse::<usize>().expect("a line number"));
    assert!(file.starts_with("leak-tests/src/"), "relative to the checkout: {file}");
    // The line named is the one that created the handles.
    let source = std::fs::read_to_string(workspace().join(file)).expect("the file named exists");
    let text = source.lines().nth(line - 1).expect("the line named exists");
    assert!(text.contains("options"), "{file}:{line} is `{text}`");

    // The job summary: the verdict as its heading, the leak and its place in a table.
    let md = std::fs::read_to_string(&summary).expect("the job summary was written");
    let (headings, rows) = markdown(&md);
    assert_eq!(headings.first().map(String::as_str), Some("leakcheck check: leak"), "{md}");
    assert!(headings.iter().any(|h| h == "What leaked, and where"), "{md}");
    let row = rows.iter().find(|r| r.first().is_some_and(|c| c == "live_handles.Options")).expect("the leak's row");
    assert_eq!(row.get(2), Some(&format!("{file}:{line}")), "{md}");

    // JUnit: the leaking signal's test case has a failure naming the same place.
    let xml = std::fs::read_to_string(&junit).expect("the JUnit file was written");
    let failure = junit_failure(&xml, "live_handles.Options").expect("a failure for live_handles.Options");
    assert!(failure.contains(&format!("{file}:{line}")), "{failure}");
}

/// The `message` of the failure in the test case named `case`.
fn junit_failure(xml: &str, case: &str) -> Option<String> {
    use quick_xml::events::Event;
    let mut reader = quick_xml::Reader::from_str(xml);
    let mut current = None;
    loop {
        match reader.read_event().expect("well-formed XML") {
            Event::Start(e) | Event::Empty(e) => {
                let attr = |name: &str| {
                    e.attributes()
                        .flatten()
                        .find(|a| a.key.as_ref() == name.as_bytes())
                        .map(|a| a.normalized_value(quick_xml::XmlVersion::Explicit1_0).expect("value").into_owned())
                };
                match e.name().as_ref() {
                    b"testcase" => current = attr("name"),
                    b"failure" if current.as_deref() == Some(case) => return attr("message"),
                    _ => {}
                }
            }
            Event::Eof => return None,
            _ => {}
        }
    }
}

#[test]
fn a_suppressed_leak_passes_and_a_malformed_file_is_exit_2_naming_its_line() {
    let dir = tempfile::tempdir().expect("tempdir");
    let summary = dir.path().join("summary.md");
    // The planted leak: 4 KiB a cycle from a plain C malloc, all of it in the allocation record
    // at its stack. (The planted Options, `offsets-options-tracked`, would not do: its default
    // block cache maps its table with mmap, outside malloc, where no suppression by function
    // reaches, and the anonymous memory outside jemalloc rightly grows with it.)
    let file = dir.path().join("leakcheck.toml");
    std::fs::write(&file, "[[suppress]]\nfunction = \"ReferenceStore::leak_native\"\nreason = \"planted\"\n")
        .expect("write");
    let file_s = file.to_str().expect("utf-8");
    let args =
        ["check", "--plant", "raw-malloc-per-cycle", "--tasks", "1", "--segments", "1", "--suppressions", file_s];
    let out = in_actions(&args, &summary);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}\nstderr: {}", String::from_utf8_lossy(&out.stderr));
    let notices: Vec<_> = stdout.lines().filter_map(command).filter(|(n, _, _)| n == "notice").collect();
    assert_eq!(notices.len(), 1, "the suppression applied is noted at its line: {stdout}");
    assert_eq!(notices[0].1["line"], "1");
    assert!(stdout.lines().filter_map(command).all(|(n, _, _)| n != "error"), "{stdout}");

    std::fs::write(&file, "[[suppress]]\nfunction = \"ReferenceStore::leak_native\"\n").expect("write");
    let out = in_actions(&args, &summary);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains(&format!("{file_s}:1:")) && stderr.contains("reason"), "{stderr}");
}
