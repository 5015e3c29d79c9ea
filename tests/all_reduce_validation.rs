//! Communicator calls are validated before any GPU work: wrong rank counts,
//! mismatched sizes or dtypes, misaligned outputs, oversized messages, missing
//! or stray scalars give typed errors naming the value and the rule. Pure CPU
//! (fake buffers stand in for device memory).

mod common;

use redjit::all_reduce::{Call, check_call};
use redjit::{AllReduceAlgo, DType, Error, KernelInput, KernelOutput, Op};

use common::FakeBuffer as Fake;

fn fake(dtype: DType, len: usize, address: u64) -> Fake {
    Fake {
        dtype,
        len,
        address,
    }
}

/// Runs check_call on `world` ranks of bf16 x 1000 after `edit` changes them.
fn check(
    world: usize,
    call: Call,
    edit: impl Fn(&mut Vec<Fake>, &mut Vec<Fake>),
) -> Result<(DType, usize), Error> {
    let mut ins: Vec<Fake> = (0..world)
        .map(|r| fake(DType::BF16, 1000, 0x7000_0000 + r as u64 * 4096 + 2))
        .collect();
    let mut outs: Vec<Fake> = (0..world)
        .map(|r| fake(DType::BF16, 1000, 0x9000_0000 + r as u64 * 4096))
        .collect();
    edit(&mut ins, &mut outs);
    let addresses: Vec<u64> = outs.iter().map(|f| f.address).collect();
    let inputs: Vec<&dyn KernelInput> = ins.iter().map(|f| f as &dyn KernelInput).collect();
    let outputs: Vec<&mut dyn KernelOutput> = outs
        .iter_mut()
        .map(|f| f as &mut dyn KernelOutput)
        .collect();
    check_call(4, 1 << 20, &inputs, &outputs, &addresses, call)
}

fn rule(r: Result<(DType, usize), Error>) -> String {
    match r {
        Err(Error::Comm { what, rule }) => format!("{what}: {rule}"),
        other => panic!("expected a communicator error, got {other:?}"),
    }
}

#[test]
fn a_valid_call_passes_with_misaligned_inputs() {
    // Inputs 2 bytes past a boundary are staged; outputs are aligned.
    assert_eq!(
        check(4, Call::sum(AllReduceAlgo::TwoStage), |_, _| {}).unwrap(),
        (DType::BF16, 1000)
    );
}

#[test]
fn invalid_calls_name_the_value_and_the_rule() {
    let sum = Call::sum(AllReduceAlgo::OneShot);
    let cases: Vec<(String, String)> = vec![
        (
            rule(check(3, sum, |_, _| {})),
            "rank count: 3 inputs and 3 outputs for 4 ranks".into(),
        ),
        (
            rule(check(4, sum, |i, _| i[2].len = 999)),
            "sizes: rank 2's input is bf16 x 999, rank 0's bf16 x 1000".into(),
        ),
        (
            rule(check(4, sum, |i, _| i[1].dtype = DType::F16)),
            "sizes: rank 1's input is f16 x 1000".into(),
        ),
        (
            rule(check(4, sum, |_, o| o[3].len = 10)),
            "sizes: rank 3's output is bf16 x 10".into(),
        ),
        (
            rule(check(4, sum, |_, o| o[1].address += 8)),
            "alignment: rank 1's output starts at 0x90001008".into(),
        ),
        (
            rule(check(4, sum, |i, o| {
                for f in i.iter_mut().chain(o.iter_mut()) {
                    f.len = 1 << 20;
                }
            })),
            "size: 2097152 bytes per rank: this communicator's buffers hold 1048576".into(),
        ),
        (
            rule(check(4, Call { op: Op::Avg, ..sum }, |_, _| {})),
            "scalar: op avg needs the count the sum is divided by".into(),
        ),
        (
            rule(check(
                4,
                Call {
                    scalar: Some(2.0),
                    ..sum
                },
                |_, _| {},
            )),
            "scalar: op sum takes no scalar, got 2".into(),
        ),
        (
            rule(check(
                4,
                Call {
                    skip_rank: Some(4),
                    ..sum
                },
                |_, _| {},
            )),
            "skip_rank: rank 4 of 4".into(),
        ),
    ];
    for (got, want) in cases {
        assert!(got.contains(&want), "{got:?} lacks {want:?}");
    }
}
