//! OpenCL C validation: every case through `clang -x cl -cl-std=CL1.2 -fsyntax-only` (all
//! device features assumed), then through a real PoCL program build with the options the
//! runtime derives from the device, so refusals follow the device's extensions.

mod support;

use opencl3::device::{CL_DEVICE_TYPE_ALL, Device};
use sarek_compiler::TargetOptions;
use sarek_compiler::back::cfamily::{Dialect, generate};
use std::process::Command;
use support::validate::{assert_refusal, cases, skip};

#[test]
fn clang_syntax() {
    if Command::new("clang").arg("--version").output().is_err() {
        return skip("opencl", "clang is not installed");
    }
    let dir = tempdir("cl");
    let mut checked = 0;
    for case in cases() {
        let g = match generate(&case.kernel, Dialect::OpenCl, &TargetOptions::default()) {
            Ok(g) => g,
            Err(d) => {
                assert_refusal(&case, Dialect::OpenCl, &d);
                continue;
            }
        };
        let path = dir.join(format!("{}.cl", case.name));
        std::fs::write(&path, &g.source).unwrap();
        let mut cmd = Command::new("clang");
        cmd.args([
            "-x",
            "cl",
            "-fsyntax-only",
            "-Xclang",
            "-finclude-default-header",
        ]);
        // Subgroup built-ins are declared by clang's header for OpenCL C 2.0 only.
        if g.source.contains("sub_group_") {
            cmd.args(["-cl-std=CL2.0", "-target", "spir64"]);
        } else {
            cmd.arg("-cl-std=CL1.2");
        }
        let out = cmd.arg(&path).output().expect("clang runs");
        assert!(
            out.status.success(),
            "{}: clang rejected the OpenCL C:\n{}\n{}",
            case.name,
            String::from_utf8_lossy(&out.stderr),
            g.source
        );
        checked += 1;
    }
    eprintln!("clang accepted {checked} OpenCL C kernels");
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
    };
    let context = opencl3::context::Context::from_device(&device).expect("context");
    let (mut built, mut refused) = (0, 0);
    for case in cases() {
        let g = match generate(&case.kernel, Dialect::OpenCl, &options) {
            Ok(g) => g,
            Err(d) => {
                assert_refusal(&case, Dialect::OpenCl, &d);
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

fn tempdir(tag: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("sarek-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}
