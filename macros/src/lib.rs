//! `#[leakcheck::test]`: an ordinary test, run as a leak check. Use it through `leakcheck`
//! (`#[leakcheck::test]`), which re-exports it and holds everything the expansion calls.
//!
//! The attribute checks what it can while the test compiles: the function's shape (no
//! arguments, no generics, not `async`), each setting's name and type, `cycles` and
//! `max_cycles` against leakcheck's minimum and each other (a constant assertion), and that the
//! suppression file exists. A fault plan is read when the test starts, before its first cycle.

use proc_macro::TokenStream;
use proc_macro2::{Span, TokenStream as TokenStream2};
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{parse_macro_input, Error, ItemFn, LitBool, LitInt, LitStr};

/// Runs the test's body as the cycles of a leak check, in a process of its own, and fails the
/// test unless the verdict is clean (leakcheck's `runner::attribute` has the whole story).
///
/// ```ignore
/// #[leakcheck::test]
/// fn puts_and_gets() { /* an ordinary test body: open a DB, use it, drop it */ }
///
/// #[leakcheck::test(cycles = 40, faults = "flush=10%", seed = 7)]
/// fn flushes() -> Result<(), rocksdb::Error> {
///     if leakcheck::fault("flush") { return Ok(()); } // a failure path, taken when the plan fires it
///     Ok(())
/// }
/// ```
///
/// Settings: `cycles`, `max_cycles`, `faults = "..."`, `seed`, `suppressions = "path"` (from the
/// package's root), `generations = false`.
#[proc_macro_attribute]
pub fn test(args: TokenStream, item: TokenStream) -> TokenStream {
    let function = parse_macro_input!(item as ItemFn);
    let mut settings = Settings::default();
    let parser = syn::meta::parser(|meta| settings.read(meta));
    parse_macro_input!(args with parser);
    match expand(&function, &settings) {
        Ok(tokens) => tokens.into(),
        Err(e) => e.to_compile_error().into(),
    }
}

/// The attribute's settings as written.
#[derive(Default)]
struct Settings {
    cycles: Option<LitInt>,
    max_cycles: Option<LitInt>,
    faults: Option<LitStr>,
    seed: Option<LitInt>,
    suppressions: Option<LitStr>,
    generations: Option<LitBool>,
}

const KNOWN: &str = "cycles, max_cycles, faults, seed, suppressions, generations";

impl Settings {
    fn read(&mut self, meta: syn::meta::ParseNestedMeta<'_>) -> syn::Result<()> {
        let Some(name) = meta.path.get_ident().map(ToString::to_string) else {
            return Err(meta.error(format!("leakcheck::test: a setting is one name; known: {KNOWN}")));
        };
        let once = |span: Span, taken: bool| {
            if taken {
                Err(Error::new(span, format!("leakcheck::test: `{name}` is set twice")))
            } else {
                Ok(())
            }
        };
        let span = meta.path.span();
        match name.as_str() {
            "cycles" => {
                once(span, self.cycles.is_some())?;
                self.cycles = Some(positive(meta.value()?.parse()?, "cycles")?);
            }
            "max_cycles" => {
                once(span, self.max_cycles.is_some())?;
                self.max_cycles = Some(positive(meta.value()?.parse()?, "max_cycles")?);
            }
            "seed" => {
                once(span, self.seed.is_some())?;
                let seed: LitInt = meta.value()?.parse()?;
                seed.base10_parse::<u64>()?;
                self.seed = Some(seed);
            }
            "faults" => {
                once(span, self.faults.is_some())?;
                let plan: LitStr = meta.value()?.parse()?;
                if plan.value().trim().is_empty() {
                    return Err(Error::new(
                        plan.span(),
                        "leakcheck::test: an empty fault plan; write `faults = \"none\"` for none",
                    ));
                }
                self.faults = Some(plan);
            }
            "suppressions" => {
                once(span, self.suppressions.is_some())?;
                let file: LitStr = meta.value()?.parse()?;
                if std::path::Path::new(&file.value()).is_absolute() {
                    return Err(Error::new(file.span(), "leakcheck::test: name the suppression file from the package's root (leakcheck.toml), not an absolute path"));
                }
                self.suppressions = Some(file);
            }
            "generations" => {
                once(span, self.generations.is_some())?;
                self.generations = Some(meta.value()?.parse()?);
            }
            other => return Err(meta.error(format!("leakcheck::test: unknown setting `{other}`; known: {KNOWN}"))),
        }
        Ok(())
    }
}

fn positive(n: LitInt, name: &str) -> syn::Result<LitInt> {
    match n.base10_parse::<u64>()? {
        0 => Err(Error::new(n.span(), format!("leakcheck::test: `{name}` must be at least 1"))),
        _ => Ok(n),
    }
}

fn expand(f: &ItemFn, s: &Settings) -> syn::Result<TokenStream2> {
    let sig = &f.sig;
    if let Some(a) = &sig.asyncness {
        return Err(Error::new(
            a.span(),
            "leakcheck::test: an async test is not supported; block on its future in a synchronous test",
        ));
    }
    if !sig.inputs.is_empty() {
        return Err(Error::new(sig.inputs.span(), "leakcheck::test: a test takes no arguments"));
    }
    if !sig.generics.params.is_empty() || sig.generics.where_clause.is_some() {
        return Err(Error::new(sig.generics.span(), "leakcheck::test: a test has no generics"));
    }
    if let Some(c) = &sig.constness {
        return Err(Error::new(c.span(), "leakcheck::test: a test is not a `const fn`"));
    }
    if let Some(u) = &sig.unsafety {
        return Err(Error::new(u.span(), "leakcheck::test: a test is not an `unsafe fn`"));
    }
    if let Some(t) = f.attrs.iter().find(|a| a.path().is_ident("test")) {
        return Err(Error::new(
            t.span(),
            "leakcheck::test: remove `#[test]`: `#[leakcheck::test]` makes the function a test",
        ));
    }
    let (attrs, vis, name, output, block) = (&f.attrs, &f.vis, &sig.ident, &sig.output, &f.block);
    let some_u64 = |v: &Option<LitInt>| match v {
        Some(n) => quote!(::core::option::Option::Some(#n)),
        None => quote!(::core::option::Option::None),
    };
    let some_str = |v: &Option<LitStr>| match v {
        Some(s) => quote!(::core::option::Option::Some(#s)),
        None => quote!(::core::option::Option::None),
    };
    let (cycles, max_cycles, seed, faults) =
        (some_u64(&s.cycles), some_u64(&s.max_cycles), some_u64(&s.seed), some_str(&s.faults));
    let line = quote_spanned!(name.span()=> ::core::line!());
    let generations = s.generations.as_ref().is_none_or(LitBool::value);
    // The cycles against the library's own minimum, and against each other, while compiling.
    let bounds = quote_spanned! {s.cycles.as_ref().map_or(name.span(), |c| c.span())=>
        const _: () = ::leakcheck::runner::attribute::check_cycles(#cycles, #max_cycles);
    };
    // A missing suppression file fails the build (and a changed one rebuilds the test).
    let (suppressions, exists) = match &s.suppressions {
        Some(file) => (
            quote!(::core::option::Option::Some(::core::concat!(::core::env!("CARGO_MANIFEST_DIR"), "/", #file))),
            quote_spanned! {file.span()=>
                const _: &[u8] = ::core::include_bytes!(::core::concat!(::core::env!("CARGO_MANIFEST_DIR"), "/", #file));
            },
        ),
        None => (quote!(::core::option::Option::None), TokenStream2::new()),
    };
    Ok(quote! {
        #[test]
        #(#attrs)*
        #vis fn #name() {
            #bounds
            #exists
            fn __leakcheck_test_body() #output #block
            ::leakcheck::runner::attribute::run(
                &::leakcheck::runner::attribute::TestSpec {
                    path: ::core::concat!(::core::module_path!(), "::", ::core::stringify!(#name)),
                    file: ::core::file!(),
                    line: #line,
                    cycles: #cycles,
                    max_cycles: #max_cycles,
                    faults: #faults,
                    seed: #seed,
                    suppressions: #suppressions,
                    generations: #generations,
                },
                __leakcheck_test_body,
            )
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use syn::parse::Parser;

    /// The attribute's expansion of `item` under `args`, or its compile error's message.
    fn expanded(args: &str, item: &str) -> Result<String, String> {
        let mut settings = Settings::default();
        let parser = syn::meta::parser(|meta| settings.read(meta));
        parser.parse_str(args).map_err(|e| e.to_string())?;
        let function: ItemFn = syn::parse_str(item).map_err(|e| e.to_string())?;
        expand(&function, &settings).map(|t| t.to_string()).map_err(|e| e.to_string())
    }

    #[::core::prelude::v1::test]
    fn settings_reach_the_spec_and_the_cycles_are_checked_while_compiling() {
        let out =
            expanded("cycles = 40, max_cycles = 80, faults = \"flush=10%\", seed = 7", "fn t() {}").expect("expands");
        assert!(
            out.contains(
                "check_cycles (:: core :: option :: Option :: Some (40) , :: core :: option :: Option :: Some (80))"
            ),
            "{out}"
        );
        assert!(out.contains("faults : :: core :: option :: Option :: Some (\"flush=10%\")"), "{out}");
        assert!(out.contains("# [test]"), "{out}");
    }

    #[::core::prelude::v1::test]
    fn a_suppression_file_must_exist_while_compiling() {
        let out = expanded("suppressions = \"leakcheck.toml\"", "fn t() {}").expect("expands");
        assert!(out.contains("include_bytes !"), "{out}");
        let e = expanded("suppressions = \"/etc/leakcheck.toml\"", "fn t() {}").expect_err("absolute");
        assert!(e.contains("package's root"), "{e}");
    }

    #[::core::prelude::v1::test]
    fn mistakes_are_named() {
        for (args, item, says) in [
            ("cycle = 30", "fn t() {}", "unknown setting `cycle`"),
            ("cycles = 0", "fn t() {}", "at least 1"),
            ("cycles = \"30\"", "fn t() {}", "expected integer literal"),
            ("seed = 1, seed = 2", "fn t() {}", "set twice"),
            ("faults = \"\"", "fn t() {}", "empty fault plan"),
            ("generations = 0", "fn t() {}", "expected boolean literal"),
            ("", "fn t(x: u8) {}", "takes no arguments"),
            ("", "async fn t() {}", "async"),
            ("", "fn t<T>() {}", "no generics"),
            ("", "#[test] fn t() {}", "remove `#[test]`"),
        ] {
            let e = expanded(args, item).expect_err(args);
            assert!(e.contains(says), "{args} / {item}: {e}");
        }
    }
}
