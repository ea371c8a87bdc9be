//! OpenCL C validation: every `tests/out/opencl` file through `clang -x cl -cl-std=CL1.2
//! -fsyntax-only` (all device features assumed), then through a real PoCL program build with the options the
//! runtime derives from the device, so refusals follow the device's extensions.

use crate::support;

use crate::support::outputs;
use opencl3::device::{CL_DEVICE_TYPE_ALL, Device};
use sarek_compiler::back::cfamily::{Dialect, generate};
use sarek_compiler::{Target, TargetOptions};
use std::process::Command;
use support::validate::{assert_refusal, cases, skip};

/// Every OpenCL C file under `tests/out/opencl` (as generated: the `outputs` test keeps them
/// equal) passes clang's syntax check.
#[test]
fn clang_syntax() {
    if Command::new("clang").arg("--version").output().is_err() {
        return skip("opencl", "clang is not installed");
    }
    let files = outputs::files(Target::OpenCl);
    for path in &files {
        let source = std::fs::read_to_string(path).unwrap();
        let mut cmd = Command::new("clang");
        cmd.args([
            "-x",
            "cl",
            "-fsyntax-only",
            "-Xclang",
            "-finclude-default-header",
        ]);
        // Subgroup built-ins are declared by clang's header for OpenCL C 2.0 only.
        if source.contains("sub_group_") {
            cmd.args(["-cl-std=CL2.0", "-target", "spir64"]);
        } else {
            cmd.arg("-cl-std=CL1.2");
        }
        let out = cmd.arg(path).output().expect("clang runs");
        assert!(
            out.status.success(),
            "{}: clang rejected the OpenCL C:\n{}",
            path.display(),
            String::from_utf8_lossy(&out.stderr),
        );
    }
    eprintln!("clang accepted {} OpenCL C files", files.len());
}

#[test]
fn pocl_build() {
    let device = match first_device() {
        Ok(d) => d,
        Err(reason) => return skip("opencl", &reason),
    };
    let ext = device.extensions().unwrap_or_default();
    let options = TargetOptions {
        subgroups: ext.contains("cl_khr_subgroups")
            && ext.contains("cl_khr_subgroup_shuffle")
            && ext.contains("cl_khr_subgroup_shuffle_relative")
            && ext.contains("cl_khr_subgroup_ballot"),
        float64: ext.contains("cl_khr_fp64"),
        int64_atomics: ext.contains("cl_khr_int64_base_atomics")
            && ext.contains("cl_khr_int64_extended_atomics"),
        checked: false,
        portable: false,
    };
    let context = opencl3::context::Context::from_device(&device).expect("context");
    let (mut built, mut refused) = (0, 0);
    for case in cases() {
        let g = match generate(&case.kernel, Dialect::OpenCl, &options) {
            Ok(g) => g,
            Err(d) => {
                assert_refusal(&case, Target::OpenCl, &d);
                refused += 1;
                continue;
            }
        };
        if let Err(log) = opencl3::program::Program::create_and_build_from_source(
            &context,
            &g.source,
            "-cl-std=CL1.2",
        ) {
            panic!(
                "{}: PoCL rejected the OpenCL C:\n{log}\n{}",
                case.name, g.source
            );
        }
        built += 1;
    }
    eprintln!(
        "{}: built {built} kernels, {refused} refused for this device",
        device.name().unwrap_or_default()
    );
}

fn first_device() -> Result<Device, String> {
    let platforms =
        opencl3::platform::get_platforms().map_err(|e| format!("no OpenCL platform ({e})"))?;
    for p in platforms {
        if let Ok(ids) = p.get_devices(CL_DEVICE_TYPE_ALL)
            && let Some(id) = ids.first()
        {
            return Ok(Device::new(*id));
        }
    }
    Err("no OpenCL device".into())
}
