//! The `redjit` binary's errors: each is one line on stderr, starting with
//! `error:`, and a non-zero exit (2 bad input, 1 the environment). No GPU needed:
//! the missing-GPU case is checked only where there is none.

use std::process::{Command, Output};

fn redjit(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_redjit"))
        .args(args)
        .output()
        .expect("the redjit binary runs")
}

/// Asserts exit `code` and one `error:` line on stderr containing every `needle`.
fn one_line_error(args: &[&str], code: i32, needles: &[&str]) {
    let out = redjit(args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(code), "redjit {args:?}: {stderr}");
    let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "redjit {args:?}: not one line:\n{stderr}");
    assert!(lines[0].starts_with("error:"), "{stderr}");
    for n in needles {
        assert!(
            lines[0].contains(n),
            "redjit {args:?}: {n:?} missing in {stderr}"
        );
    }
}

fn has_gpu() -> bool {
    redjit_runtime::gpu_available().is_ok()
}

#[test]
fn unknown_family() {
    one_line_error(&["bench", "softmax"], 2, &["softmax"]);
    one_line_error(
        &["selftest", "--family", "softmax"],
        2,
        &["unknown kernel family \"softmax\"", "reduce-copy"],
    );
    one_line_error(&["gen", "--spec", "softmax_f32"], 2, &["no known family"]);
}

#[test]
fn bad_size_list() {
    one_line_error(
        &["bench", "all", "--sizes", "1K,x"],
        2,
        &["bad size list", "\"x\"", "2^28"],
    );
    one_line_error(
        &["bench", "reduce-copy", "--sizes", "2^99"],
        2,
        &["bad size list"],
    );
    one_line_error(
        &["bench", "reduce", "--shapes", "32768"],
        2,
        &["bad shape list"],
    );
}

#[test]
fn unreadable_or_malformed_compare_json() {
    one_line_error(
        &["bench", "reduce", "--compare", "/nonexistent/torch.json"],
        2,
        &["cannot read --compare file"],
    );
    let path = std::env::temp_dir().join(format!("redjit-cli-bad-{}.json", std::process::id()));
    std::fs::write(&path, "{ not json").unwrap();
    let p = path.to_string_lossy().into_owned();
    one_line_error(
        &["bench", "all", "--compare", &p],
        2,
        &["is not a torch_ref.py JSON"],
    );
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn bad_plot_file_and_flags() {
    one_line_error(&["bench", "all", "--plot", "out.pdf"], 2, &[".svg or .png"]);
    one_line_error(&["bench", "reduce", "--iters", "0"], 2, &["--iters"]);
    one_line_error(&["selftest", "--n", "1"], 2, &["--n"]);
    one_line_error(&["bench", "reduce-copy", "--unroll", "3"], 2, &["unroll"]);
}

#[test]
fn missing_gpu() {
    if has_gpu() {
        eprintln!("skipping: this machine has a GPU");
        return;
    }
    one_line_error(
        &["bench", "all", "--sizes", "1K"],
        1,
        &["cannot run", "GPU"],
    );
    one_line_error(
        &["bench", "reduce"],
        1,
        &["`redjit bench reduce` cannot run"],
    );
}

#[test]
fn bad_all_reduce_bench_flags() {
    // Checked before any GPU is looked for.
    one_line_error(
        &["bench", "all-reduce", "--bytes", "8K,3"],
        2,
        &["--bytes 3", "whole number of bf16"],
    );
    one_line_error(
        &["bench", "all-reduce", "--algos", "one-shot,ring"],
        2,
        &["\"ring\"", "two-stage-cp"],
    );
    one_line_error(
        &["bench", "all-reduce", "--dtype", "e4m3"],
        2,
        &["--dtype e4m3", "f32, bf16 or f16"],
    );
    one_line_error(&["bench", "all-reduce", "--bytes", "1K,x"], 2, &["\"x\""]);
    one_line_error(
        &["bench", "all-reduce", "--quantized"],
        2,
        &["--dtype bf16", "f32 in and out"],
    );
    one_line_error(
        &[
            "bench",
            "all-reduce",
            "--quantized",
            "--dtype",
            "f32",
            "--algos",
            "one-shot,push",
        ],
        2,
        &["--algos push", "one-shot and two-stage"],
    );
}

#[test]
fn clap_errors_name_what_is_missing_or_allowed_on_one_line() {
    one_line_error(&["report"], 2, &["required arguments", "<JSON>"]);
    one_line_error(
        &["bench", "norm", "--launch-gap", "bogus"],
        2,
        &["bogus", "possible values: hidden, counted"],
    );
}

#[test]
fn a_huge_spec_name_is_not_echoed_whole() {
    let name = format!("norm_{}", "x".repeat(100_000));
    let out = redjit(&["gen", "--spec", &name]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        &stderr[..stderr.len().min(400)]
    );
    assert!(stderr.len() < 1000, "{} bytes of error", stderr.len());
    assert!(stderr.contains("100005 bytes in all"), "{stderr}");
}

#[test]
fn a_cache_dir_that_is_a_file_is_an_error() {
    let file = std::env::temp_dir().join(format!("redjit-cache-file-{}", std::process::id()));
    std::fs::write(&file, b"not a cache").unwrap();
    let path = file.to_str().unwrap().to_string();
    for action in ["ls", "size", "clear"] {
        one_line_error(
            &["cache", "--dir", &path, action],
            2,
            &["not a folder", &path],
        );
    }
    assert_eq!(std::fs::read(&file).unwrap(), b"not a cache");
    std::fs::remove_file(&file).ok();
}

#[test]
fn gen_lists_valid_kernel_names() {
    let out = redjit(&["gen", "--list", "--family", "norm,reduce"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let names: Vec<&str> = text.lines().collect();
    assert!(names.len() > 100, "{}", names.len());
    for n in &names {
        assert!(n.starts_with("norm_") || n.starts_with("reduce_"), "{n}");
    }
    // Listed names generate their source (every one: cmd_gen's unit test).
    for n in names.iter().step_by(97) {
        let src = redjit(&["gen", "--spec", n]);
        assert_eq!(
            src.status.code(),
            Some(0),
            "{n}: {}",
            String::from_utf8_lossy(&src.stderr)
        );
        assert!(
            String::from_utf8_lossy(&src.stdout).contains("__global__"),
            "{n}"
        );
    }
    one_line_error(
        &["gen", "--list", "--spec", names[0]],
        2,
        &["--list prints names"],
    );
    one_line_error(&["gen", "--family", "norm"], 2, &["--list"]);
}

#[test]
fn an_arch_this_nvrtc_lacks_is_one_line_of_bad_input() {
    // Needs NVRTC (the README's test command installs it); without it the
    // cause is NVRTC's absence, a failure of one line.
    let out = redjit(&[
        "ptx",
        "--arch",
        "sm_101",
        "--spec",
        "norm_rmsnorm_bf16_bf16_w32x1",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.lines().count() <= 2, "{err}");
    if err.contains("NVRTC is not available") {
        assert_eq!(out.status.code(), Some(1), "{err}");
    } else {
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(
            err.contains("--arch sm_101") && err.contains("sm_90"),
            "{err}"
        );
    }
    assert!(out.stdout.is_empty());
}

#[test]
fn info_and_cache_ls_speak_json() {
    let out = redjit(&["info", "--json"]);
    assert_eq!(out.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("info --json is JSON");
    for key in ["gpu", "nvrtc", "cache"] {
        assert!(v.get(key).is_some(), "{key} missing: {v}");
    }
    let dir = std::env::temp_dir().join(format!("redjit-cache-json-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("a.rjc"), [0u8; 10]).unwrap();
    let out = redjit(&["cache", "--dir", dir.to_str().unwrap(), "ls", "--json"]);
    assert_eq!(out.status.code(), Some(0));
    let v: serde_json::Value =
        serde_json::from_slice(&out.stdout).expect("cache ls --json is JSON");
    assert_eq!(v["entries"][0]["file"], "a.rjc", "{v}");
    assert_eq!(v["entries"][0]["bytes"], 10, "{v}");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn list_prints_each_familys_grammar_and_names_that_parse() {
    let out = redjit(&["list"]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8(out.stdout).unwrap();
    for family in [
        "reduce_copy",
        "reduce",
        "all_reduce",
        "norm",
        "nms",
        "softmax_all",
    ] {
        assert!(
            text.lines().any(|l| l == family),
            "{family} missing:\n{text}"
        );
    }
    let mut examples = 0;
    for line in text.lines() {
        let names = line
            .strip_prefix("  examples: ")
            .map(|l| l.split(", ").collect::<Vec<_>>())
            .or_else(|| {
                line.split_once(", e.g. ")
                    .map(|(_, e)| vec![e.split_whitespace().next().unwrap()])
            })
            .unwrap_or_default();
        for name in names {
            let out = redjit(&["gen", "--spec", name]);
            assert_eq!(
                out.status.code(),
                Some(0),
                "{name}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            examples += 1;
        }
    }
    assert!(examples >= 24, "{examples}: {text}");
    // A family that does not exist: one line, exit 2.
    let out = redjit(&["list", "bogus"]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(String::from_utf8_lossy(&out.stderr).lines().count(), 1);
}

#[test]
fn selftest_writes_its_results_as_json() {
    if has_gpu() {
        return;
    }
    let path = std::env::temp_dir().join(format!("redjit-selftest-{}.json", std::process::id()));
    let out = redjit(&[
        "selftest",
        "--family",
        "nms",
        "--json",
        path.to_str().unwrap(),
    ]);
    // Without a GPU: generation and compilation checked, exit 3.
    assert_eq!(
        out.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    assert_eq!(v["mode"], "compile-only");
    assert_eq!(v["families"][0]["family"], "nms");
    assert_eq!(
        v["families"][0]["failures"].as_array().map(Vec::len),
        Some(0)
    );
    assert!(v["families"][0]["kernels"].as_u64().unwrap() >= 5, "{v}");
    let _ = std::fs::remove_file(path);
}
