//! The verdict as JUnit XML, for CI systems that read test results in that form: one test suite
//! for the run, one test case per judged signal (and the return to baseline), a `<failure>` per
//! leak whose message says what leaked and where, an `<error>` per signal the run could not
//! decide, a `<skipped>` per signal that measured nothing.

use std::io;

use quick_xml::events::{BytesDecl, BytesText, Event};
use quick_xml::Writer;

use super::model::Finding;
use super::RunReport;
use crate::verdict::Verdict;

/// One test case: a judged signal and its outcome.
struct Case {
    name: String,
    verdict: Verdict,
    /// What leaked (or is undecided), one finding per line.
    findings: Vec<String>,
    /// The signal's own line: its estimate or residue.
    summary: String,
}

/// The run's JUnit XML document.
pub fn junit_xml(report: &RunReport) -> String {
    let findings = report.findings();
    let about = |signal: &str| -> Vec<String> {
        findings.iter().filter(|f| belongs(f, signal)).map(|f| f.message.clone()).collect()
    };
    let mut cases: Vec<Case> = report
        .verdict
        .signals
        .iter()
        .filter(|s| !s.informational)
        .map(|s| {
            let [verdict, per_cycle, detail] = super::words::signal_cells(s);
            Case {
                name: s.signal.to_string(),
                verdict: s.verdict,
                findings: about(&s.signal.to_string()),
                summary: format!("{verdict}, per cycle {per_cycle}, {detail}"),
            }
        })
        .collect();
    if let Some(b) = &report.verdict.baseline_return {
        cases.push(Case {
            name: "baseline_return".to_string(),
            verdict: b.verdict,
            findings: about("baseline_return"),
            summary: format!("return to baseline: {}", b.verdict),
        });
    }
    // Writing to a Vec cannot fail.
    document(report, &cases).unwrap_or_default()
}

/// Whether `f` is about `signal`: the signal itself, or a member of its family
/// (`live_handles.Options` is about `live_handles`).
fn belongs(f: &Finding, signal: &str) -> bool {
    f.signal == signal || f.signal.strip_prefix(signal).is_some_and(|rest| rest.starts_with('.'))
}

fn document(report: &RunReport, cases: &[Case]) -> io::Result<String> {
    let count = |v: Verdict| cases.iter().filter(|c| c.verdict == v).count().to_string();
    let (tests, failures, errors) = (cases.len().to_string(), count(Verdict::Leak), count(Verdict::Inconclusive));
    let skipped = count(Verdict::NotMeasured);
    let time = format!("{:.3}", report.elapsed_seconds);
    let s = &report.settings;
    let suite = if s.store.is_empty() {
        format!("leakcheck {}", s.command)
    } else {
        format!("leakcheck {} {}", s.command, s.store)
    };
    let classname = format!("leakcheck.{}", if s.store.is_empty() { "store" } else { &s.store });
    let mut w = Writer::new_with_indent(Vec::new(), b' ', 2);
    w.write_event(Event::Decl(BytesDecl::new("1.0", Some("UTF-8"), None)))?;
    w.create_element("testsuites")
        .with_attributes([
            ("name", "leakcheck"),
            ("tests", tests.as_str()),
            ("failures", failures.as_str()),
            ("errors", errors.as_str()),
            ("time", time.as_str()),
        ])
        .write_inner_content(|w| {
            w.create_element("testsuite")
                .with_attributes([
                    ("name", suite.as_str()),
                    ("tests", tests.as_str()),
                    ("failures", failures.as_str()),
                    ("errors", errors.as_str()),
                    ("skipped", skipped.as_str()),
                    ("time", time.as_str()),
                ])
                .write_inner_content(|w| {
                    for c in cases {
                        case(w, c, &classname)?;
                    }
                    Ok(())
                })?;
            Ok(())
        })?;
    Ok(String::from_utf8_lossy(&w.into_inner()).into_owned())
}

fn case(w: &mut Writer<Vec<u8>>, c: &Case, classname: &str) -> io::Result<()> {
    let element = w.create_element("testcase").with_attributes([
        ("name", c.name.as_str()),
        ("classname", classname),
        ("time", "0"),
    ]);
    let (tag, kind) = match c.verdict {
        Verdict::Clean => {
            element.write_empty()?;
            return Ok(());
        }
        Verdict::Leak => ("failure", "leak"),
        Verdict::Inconclusive => ("error", "inconclusive"),
        // Not measured: its source never reported, so it is neither passed nor failed.
        Verdict::NotMeasured => ("skipped", "not measured"),
    };
    let message = c.findings.first().cloned().unwrap_or_else(|| format!("{}: {}", c.name, c.summary));
    let mut body = c.findings.join("\n");
    if !body.is_empty() {
        body.push('\n');
    }
    body.push_str(&format!("{}: {}", c.name, c.summary));
    element.write_inner_content(|w| {
        w.create_element(tag)
            .with_attributes([("message", message.as_str()), ("type", kind)])
            .write_text_content(BytesText::new(&body))?;
        Ok(())
    })?;
    Ok(())
}
