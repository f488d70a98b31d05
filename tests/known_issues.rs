//! Every built-in known-issue pattern against the text the tools really print.
//!
//! The positive cases are output captured from the tools themselves (the comment above each
//! names the tool, its version where it matters, and the command), pasted verbatim; where a
//! long stack trace was cut, the comment says so. Paths such as `/tmp/ki/...` are the scratch
//! directory they were run in. The negative cases are ordinary output that looks near a
//! pattern and must not be taken for it: many of them were captured the same way.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests may panic: that is how they fail

use std::io::Write;

use luzia::jobs::insight::known_issues::{IssueScanner, PatternSet, scan_text};

/// The agents' own issues' cases, in a file of their own.
#[path = "known_issues/agents.rs"]
mod agents;

/// Every positive case: this file's, then the agents'.
fn positive() -> impl Iterator<Item = &'static Case> {
    POSITIVE.iter().chain(agents::POSITIVE)
}

/// Every negative case: this file's, then the agents'.
fn negative() -> impl Iterator<Item = &'static Case> {
    NEGATIVE.iter().chain(agents::NEGATIVE)
}

struct Case {
    /// The built-in pattern that must (or, for a negative case, must not) be found.
    pattern: &'static str,
    /// The tool and command that printed `text`.
    from: &'static str,
    text: &'static str,
}

const POSITIVE: &[Case] = &[
    // ---------------------------------------------------------------- python-module-not-found
    // Python 3.11.7: python3 -c 'import nosuchmod'
    Case {
        pattern: "python-module-not-found",
        from: "python3 -c 'import nosuchmod'",
        text: r#"Traceback (most recent call last):
  File "<string>", line 1, in <module>
ModuleNotFoundError: No module named 'nosuchmod'
"#,
    },
    // Python 3.11.7: python3 -c 'from os import nosuchname'
    Case {
        pattern: "python-module-not-found",
        from: "python3 -c 'from os import nosuchname'",
        text: r#"Traceback (most recent call last):
  File "<string>", line 1, in <module>
ImportError: cannot import name 'nosuchname' from 'os' (/root/.pyenv/versions/3.11.7/lib/python3.11/os.py)
"#,
    },
    // pytest 9 on a test module whose first line is `import nosuchmod`: pytest
    Case {
        pattern: "python-module-not-found",
        from: "pytest (collection error)",
        text: r#"==================================== ERRORS ====================================
_________________________ ERROR collecting test_imp.py _________________________
ImportError while importing test module '/tmp/ki/py/test_imp.py'.
Hint: make sure your test modules/packages have valid Python names.
Traceback:
/root/.pyenv/versions/3.11.7/lib/python3.11/importlib/__init__.py:126: in import_module
    return _bootstrap._gcd_import(name[level:], package, level)
           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
test_imp.py:1: in <module>
    import nosuchmod
E   ModuleNotFoundError: No module named 'nosuchmod'
=========================== short test summary info ============================
ERROR test_imp.py
!!!!!!!!!!!!!!!!!!!! Interrupted: 1 error during collection !!!!!!!!!!!!!!!!!!!!
=============================== 1 error in 0.14s ===============================
"#,
    },
    // ------------------------------------------------------------------ node-module-not-found
    // Node.js v20.20.2: node -e 'require("nosuch")'
    Case {
        pattern: "node-module-not-found",
        from: "node -e 'require(\"nosuch\")'",
        text: r#"node:internal/modules/cjs/loader:1210
  throw err;
  ^

Error: Cannot find module 'nosuch'
Require stack:
- /tmp/ki/[eval]
    at Module._resolveFilename (node:internal/modules/cjs/loader:1207:15)
    at Module._load (node:internal/modules/cjs/loader:1038:27)
    at Module.require (node:internal/modules/cjs/loader:1289:19)
    at require (node:internal/modules/helpers:182:18)
    at [eval]:1:1
    at runScriptInThisContext (node:internal/vm:209:10)
    at node:internal/process/execution:118:14
    at [eval]-wrapper:6:24
    at runScript (node:internal/process/execution:101:62)
    at evalScript (node:internal/process/execution:133:3) {
  code: 'MODULE_NOT_FOUND',
  requireStack: [ '/tmp/ki/[eval]' ]
}

Node.js v20.20.2
"#,
    },
    // Node.js v20.20.2: node a.mjs, a.mjs being `import x from "nosuchpkg";`
    Case {
        pattern: "node-module-not-found",
        from: "node a.mjs (ES module import of a missing package)",
        text: r#"node:internal/modules/esm/resolve:873
  throw new ERR_MODULE_NOT_FOUND(packageName, fileURLToPath(base), null);
        ^

Error [ERR_MODULE_NOT_FOUND]: Cannot find package 'nosuchpkg' imported from /tmp/ki/a.mjs
    at packageResolve (node:internal/modules/esm/resolve:873:9)
    at moduleResolve (node:internal/modules/esm/resolve:946:18)
    at defaultResolve (node:internal/modules/esm/resolve:1188:11)
    at ModuleLoader.defaultResolve (node:internal/modules/esm/loader:708:12)
    at #cachedDefaultResolve (node:internal/modules/esm/loader:657:25)
    at ModuleLoader.resolve (node:internal/modules/esm/loader:640:38)
    at ModuleLoader.getModuleJobForImport (node:internal/modules/esm/loader:264:38)
    at ModuleJob._link (node:internal/modules/esm/module_job:168:49) {
  code: 'ERR_MODULE_NOT_FOUND'
}

Node.js v20.20.2
"#,
    },
    // Node.js v20.20.2: node b.mjs, b.mjs being `import x from "./nosuchfile.js";`
    Case {
        pattern: "node-module-not-found",
        from: "node b.mjs (ES module import of a missing file)",
        text: r#"node:internal/modules/esm/resolve:283
    throw new ERR_MODULE_NOT_FOUND(
          ^

Error [ERR_MODULE_NOT_FOUND]: Cannot find module '/tmp/ki/nosuchfile.js' imported from /tmp/ki/b.mjs
    at finalizeResolution (node:internal/modules/esm/resolve:283:11)
    at moduleResolve (node:internal/modules/esm/resolve:952:10)
  code: 'ERR_MODULE_NOT_FOUND',
  url: 'file:///tmp/ki/nosuchfile.js'
}
"#,
    },
    // webpack 5.112.2: npx webpack --mode production --entry ./src/index.js (requires "nosuchpkg")
    Case {
        pattern: "node-module-not-found",
        from: "npx webpack --mode production --entry ./src/index.js",
        text: r#"assets by status 278 bytes [cached] 1 asset
./src/index.js 48 bytes [built] [code generated]

ERROR in ./src/index.js 1:10-30
Module not found: Error: Can't resolve 'nosuchpkg' in '/tmp/ki/npmproj/src'
resolve 'nosuchpkg' in '/tmp/ki/npmproj/src'
  Parsed request is a module
"#,
    },
    // esbuild (npm): npx esbuild src/index.js --bundle --outfile=out.js
    Case {
        pattern: "node-module-not-found",
        from: "npx esbuild src/index.js --bundle --outfile=out.js",
        text: r#"✘ [ERROR] Could not resolve "nosuchpkg"

    src/index.js:1:14:
      1 │ import x from "nosuchpkg";
        ╵               ~~~~~~~~~~~

  You can mark the path "nosuchpkg" as external to exclude it from the bundle, which will remove this error and leave the unresolved path in the bundle.

1 error
"#,
    },
    // TypeScript (npm typescript): npx tsc --noEmit bad.ts
    Case {
        pattern: "node-module-not-found",
        from: "npx tsc --noEmit bad.ts (import of a missing module)",
        text: "bad.ts(2,19): error TS2307: Cannot find module './nosuch' or its corresponding type declarations.\n",
    },
    // ------------------------------------------------------------- rust-unresolved-dependency
    // rustc 1.95.0: cargo build, src/main.rs using serde_yml (not a dependency), crate::nosuch,
    // a mismatched type and nosuchcrate::f()
    Case {
        pattern: "rust-unresolved-dependency",
        from: "cargo build (unresolved imports)",
        text: r#"   Compiling rp v0.1.0 (/tmp/ki/rp)
error[E0432]: unresolved import `serde_yml`
 --> src/main.rs:1:5
  |
1 | use serde_yml::Value;
  |     ^^^^^^^^^ use of unresolved module or unlinked crate `serde_yml`
  |
  = help: if you wanted to use a crate named `serde_yml`, use `cargo add serde_yml` to add it to your `Cargo.toml`

error[E0432]: unresolved import `crate::nosuch`
 --> src/main.rs:2:12
  |
2 | use crate::nosuch::Thing;
  |            ^^^^^^ could not find `nosuch` in the crate root
"#,
    },
    // rustc 1.95.0: the same build; E0433 is worded this way since rustc 1.9x
    Case {
        pattern: "rust-unresolved-dependency",
        from: "cargo build (E0433, path through a missing crate)",
        text: r#"error[E0433]: cannot find module or crate `nosuchcrate` in this scope
 --> src/main.rs:3:39
  |
3 | fn main() { let x: u32 = "a"; let _ = nosuchcrate::f(); }
  |                                       ^^^^^^^^^^^ use of unresolved module or unlinked crate `nosuchcrate`
  |
  = help: if you wanted to use a crate named `nosuchcrate`, use `cargo add nosuchcrate` to add it to your `Cargo.toml`
"#,
    },
    // rustc 1.95.0: cargo build, src/main.rs being `extern crate nosuchcrate;`
    Case {
        pattern: "rust-unresolved-dependency",
        from: "cargo build (extern crate nosuchcrate)",
        text: r#"   Compiling rp v0.1.0 (/tmp/ki/rp)
error[E0463]: can't find crate for `nosuchcrate`
 --> src/main.rs:1:1
  |
1 | extern crate nosuchcrate;
  | ^^^^^^^^^^^^^^^^^^^^^^^^^ can't find crate

For more information about this error, try `rustc --explain E0463`.
error: could not compile `rp` (bin "rp") due to 1 previous error
"#,
    },
    // cargo 1.95.0: cargo build --offline with `nosuchcrate-xyz-123 = "1"` in [dependencies]
    Case {
        pattern: "rust-unresolved-dependency",
        from: "cargo build --offline (dependency not in the index)",
        text: r#"error: no matching package named `nosuchcrate-xyz-123` found
location searched: crates.io index
required by package `rp v0.1.0 (/tmp/ki/rp)`
"#,
    },
    // cargo 1.95.0: CARGO_TERM_COLOR=always cargo build (the escape sequences as written)
    Case {
        pattern: "rust-unresolved-dependency",
        from: "CARGO_TERM_COLOR=always cargo build",
        text: "\x1b[1m\x1b[92m   Compiling\x1b[0m rp v0.1.0 (/tmp/ki/rp)\n\
               \x1b[1m\x1b[91merror[E0432]\x1b[0m\x1b[1m: unresolved import `serde_yml`\x1b[0m\n \
               \x1b[1m\x1b[94m--> \x1b[0msrc/main.rs:1:5\n",
    },
    // ---------------------------------------------------------------------- permission-denied
    // Python 3.11.7 as user nobody: python3 -c 'open("/tmp/ki/ro.txt")' (mode 000)
    Case {
        pattern: "permission-denied",
        from: "python3 -c 'open(\"/tmp/ki/ro.txt\")' as nobody",
        text: r#"Traceback (most recent call last):
  File "<string>", line 1, in <module>
PermissionError: [Errno 13] Permission denied: '/tmp/ki/ro.txt'
"#,
    },
    // Node.js v20.20.2 as nobody: node -e 'require("fs").readFileSync("/tmp/ki/ro.txt")'
    Case {
        pattern: "permission-denied",
        from: "node readFileSync of a mode-000 file as nobody",
        text: r#"Error: EACCES: permission denied, open '/tmp/ki/ro.txt'
    at Object.openSync (node:fs:573:18)
    at Object.readFileSync (node:fs:452:35)
  errno: -13,
  code: 'EACCES',
  syscall: 'open',
  path: '/tmp/ki/ro.txt'
}
"#,
    },
    // bash 5.2: bash -c ./np.sh (np.sh not executable)
    Case {
        pattern: "permission-denied",
        from: "bash -c ./np.sh",
        text: "bash: line 1: ./np.sh: Permission denied\n",
    },
    // coreutils ls as nobody: ls /tmp/ki/locked (mode 000)
    Case {
        pattern: "permission-denied",
        from: "ls /tmp/ki/locked as nobody",
        text: "ls: cannot open directory '/tmp/ki/locked': Permission denied\n",
    },
    // coreutils chown as nobody: chown root /tmp/ki/ro.txt
    Case {
        pattern: "permission-denied",
        from: "chown root /tmp/ki/ro.txt as nobody",
        text: "chown: changing ownership of '/tmp/ki/ro.txt': Operation not permitted\n",
    },
    // bash 5.2 as nobody: kill -0 1
    Case {
        pattern: "permission-denied",
        from: "bash -c 'kill -0 1' as nobody",
        text: "bash: line 1: kill: (1) - Operation not permitted\n",
    },
    // npm 11.19.1 as nobody: npm install -g /tmp/ki/npmlocal/pkg (stack trace cut)
    Case {
        pattern: "permission-denied",
        from: "npm install -g ./pkg as nobody",
        text: r#"npm error code EACCES
npm error syscall symlink
npm error path ../../../tmp/ki/npmlocal/pkg
npm error dest /usr/lib/node_modules/localpkg
npm error errno -13
npm error Error: EACCES: permission denied, symlink '../../../tmp/ki/npmlocal/pkg' -> '/usr/lib/node_modules/localpkg'
npm error
npm error The operation was rejected by your operating system.
npm error It is likely you do not have the permissions to access this file as the current user
"#,
    },
    // ------------------------------------------------------------------------- file-not-found
    // coreutils: cat /nonexistent
    Case {
        pattern: "file-not-found",
        from: "cat /nonexistent",
        text: "cat: /nonexistent: No such file or directory\n",
    },
    // Python 3.11.7: python3 -c 'open("/nonexistent/config.yaml")'
    Case {
        pattern: "file-not-found",
        from: "python3 -c 'open(\"/nonexistent/config.yaml\")'",
        text: r#"Traceback (most recent call last):
  File "<string>", line 1, in <module>
FileNotFoundError: [Errno 2] No such file or directory: '/nonexistent/config.yaml'
"#,
    },
    // Node.js v20.20.2: node -e 'require("fs").readFileSync("/nonexistent/x.txt")'
    Case {
        pattern: "file-not-found",
        from: "node readFileSync of a missing file",
        text: r#"node:fs:573
  return binding.open(
                 ^

Error: ENOENT: no such file or directory, open '/nonexistent/x.txt'
    at Object.openSync (node:fs:573:18)
    at Object.readFileSync (node:fs:452:35)
  errno: -2,
  code: 'ENOENT',
  syscall: 'open',
  path: '/nonexistent/x.txt'
}
"#,
    },
    // pytest 9: pytest tests/test_nosuch.py
    Case {
        pattern: "file-not-found",
        from: "pytest tests/test_nosuch.py",
        text: r#"============================ no tests ran in 0.00s =============================
ERROR: file or directory not found: tests/test_nosuch.py

"#,
    },
    // Python 3.11.7: python3 nosuch.py
    Case {
        pattern: "file-not-found",
        from: "python3 nosuch.py",
        text: "/root/.pyenv/versions/3.11.7/bin/python3: can't open file '/tmp/ki/py/nosuch.py': [Errno 2] No such file or directory\n",
    },
    // bash 5.2: bash -c 'cd /nonexistent'
    Case {
        pattern: "file-not-found",
        from: "bash -c 'cd /nonexistent'",
        text: "bash: line 1: cd: /nonexistent: No such file or directory\n",
    },
    // ---------------------------------------------------------------------- command-not-found
    // bash 5.2: bash -c nosuchcmd
    Case {
        pattern: "command-not-found",
        from: "bash -c nosuchcmd",
        text: "bash: line 1: nosuchcmd: command not found\n",
    },
    // bash 5.2: bash s.sh (line 3 runs nosuchcmd)
    Case {
        pattern: "command-not-found",
        from: "bash s.sh",
        text: "hi\ns.sh: line 3: nosuchcmd: command not found\n",
    },
    // dash 0.5.12 (Debian's /bin/sh): sh -c nosuchcmd
    Case {
        pattern: "command-not-found",
        from: "sh -c nosuchcmd",
        text: "sh: 1: nosuchcmd: not found\n",
    },
    // dash 0.5.12: dash d.sh (line 2 runs nosuchcmd); dash names the script, not itself
    Case {
        pattern: "command-not-found",
        from: "dash d.sh",
        text: "hi\nd.sh: 2: nosuchcmd: not found\n",
    },
    // coreutils env (UTF-8 locale, so curly quotes): env nosuchcmd
    Case {
        pattern: "command-not-found",
        from: "env nosuchcmd",
        text: "env: ‘nosuchcmd’: No such file or directory\n",
    },
    // ./e.sh whose first line is #!/usr/bin/env nosuchinterp
    Case {
        pattern: "command-not-found",
        from: "./e.sh with #!/usr/bin/env nosuchinterp",
        text: "/usr/bin/env: ‘nosuchinterp’: No such file or directory\n",
    },
    // GNU make 4.3: make, the recipe being `nosuchtool --build`
    Case {
        pattern: "command-not-found",
        from: "make (recipe runs nosuchtool)",
        text: r#"nosuchtool --build
make: nosuchtool: No such file or directory
make: *** [Makefile:2: all] Error 127
"#,
    },
    // Node.js v20.20.2: node -e 'require("child_process").spawn("nosuchtool", ["--build"])'
    Case {
        pattern: "command-not-found",
        from: "node child_process.spawn(\"nosuchtool\")",
        text: r#"node:events:502
      throw er; // Unhandled 'error' event
      ^

Error: spawn nosuchtool ENOENT
    at ChildProcess._handle.onexit (node:internal/child_process:285:19)
    at onErrorNT (node:internal/child_process:483:16)
"#,
    },
    // --------------------------------------------------------------------------- build-failed
    // rustc 1.95.0: cargo build (the E0308 build above, its last lines)
    Case {
        pattern: "build-failed",
        from: "cargo build",
        text: r#"Some errors have detailed explanations: E0308, E0432, E0433.
For more information about an error, try `rustc --explain E0308`.
error: could not compile `rp` (bin "rp") due to 4 previous errors
"#,
    },
    // gcc 12.2.0: gcc -c a.c (#include <nosuch.h>)
    Case {
        pattern: "build-failed",
        from: "gcc -c a.c",
        text: r#"a.c:1:10: fatal error: nosuch.h: No such file or directory
    1 | #include <nosuch.h>
      |          ^~~~~~~~~~
compilation terminated.
"#,
    },
    // GNU make 4.3 running gcc 12.2.0 in a sub-make: make
    Case {
        pattern: "build-failed",
        from: "make (sub-make, gcc error)",
        text: r#"make -C sub
make[1]: Entering directory '/tmp/ki/sub'
gcc -c ../b.c -o b.o
../b.c: In function ‘main’:
../b.c:1:25: error: expected expression before ‘;’ token
    1 | int main(void){ int x = ; return 0; }
      |                         ^
make[1]: *** [Makefile:2: all] Error 1
make[1]: Leaving directory '/tmp/ki/sub'
make: *** [Makefile:2: all] Error 2
"#,
    },
    // GNU make 4.3: make, `all: missing.o` and no rule for it
    Case {
        pattern: "build-failed",
        from: "make (no rule)",
        text: "make: *** No rule to make target 'missing.o', needed by 'all'.  Stop.\n",
    },
    // gcc 12.2.0: gcc c.c -o c (f declared, never defined)
    Case {
        pattern: "build-failed",
        from: "gcc c.c -o c (undefined reference)",
        text: r#"/usr/bin/ld: /tmp/ccYppu5n.o: in function `main':
c.c:(.text+0x5): undefined reference to `f'
collect2: error: ld returned 1 exit status
"#,
    },
    // g++ 12.2.0: g++ -c d.cpp
    Case {
        pattern: "build-failed",
        from: "g++ -c d.cpp",
        text: r#"d.cpp: In function ‘int main()’:
d.cpp:2:44: error: no matching function for call to ‘push_back(const char [2])’
    2 | int main(){ std::vector<int> v; v.push_back("x"); }
      |                                 ~~~~~~~~~~~^~~~~
"#,
    },
    // rustc 1.95.0: cargo build calling an extern "C" function nothing defines (the linker's
    // long command line, a `= note: "cc" ...` line, left out)
    Case {
        pattern: "build-failed",
        from: "cargo build (undefined extern \"C\" symbol)",
        text: r#"   Compiling rp v0.1.0 (/tmp/ki/rp)
error: linking with `cc` failed: exit status: 1
  |
  = note: some arguments are omitted. use `--verbose` to show all linker arguments
  = note: rust-lld: error: undefined symbol: nosuch_c_function
          >>> referenced by main.rs:2 (src/main.rs:2)
          collect2: error: ld returned 1 exit status
"#,
    },
    // Apache Maven 3.8.7, maven-compiler-plugin 3.10.1: mvn -B -o test (a missing `;`)
    Case {
        pattern: "build-failed",
        from: "mvn -B -o test (compilation error)",
        text: r#"[ERROR] COMPILATION ERROR : 
[INFO] -------------------------------------------------------------
[ERROR] /tmp/ki/mv/src/main/java/calc/Calc.java:[2,71] ';' expected
[INFO] 1 error
[INFO] -------------------------------------------------------------
[INFO] ------------------------------------------------------------------------
[INFO] BUILD FAILURE
[INFO] ------------------------------------------------------------------------
[INFO] Total time:  0.510 s
"#,
    },
    // Apache Ant 1.10: ant (javac error)
    Case {
        pattern: "build-failed",
        from: "ant",
        text: r#"compile:
    [mkdir] Created dir: /tmp/ki/antp/build
    [javac] Compiling 1 source file to /tmp/ki/antp/build
    [javac] /tmp/ki/antp/src/A.java:1: error: illegal start of expression
    [javac] public class A { int x = ; }
    [javac]                          ^
    [javac] 1 error

BUILD FAILED
/tmp/ki/antp/build.xml:1: Compile failed; see the compiler error output for details.
"#,
    },
    // OpenJDK 17 javac: javac B.java
    Case {
        pattern: "build-failed",
        from: "javac B.java",
        text: r#"B.java:1: error: illegal start of expression
public class B { int x = ; }
                         ^
1 error
"#,
    },
    // Python 3.11.7: python3 bad.py (def f(:)
    Case {
        pattern: "build-failed",
        from: "python3 bad.py",
        text: r#"  File "/tmp/ki/bad.py", line 1
    def f(:
          ^
SyntaxError: invalid syntax
"#,
    },
    // go 1.19 (Debian golang-go): go test ./... with a compile error in the package
    Case {
        pattern: "build-failed",
        from: "go test ./... (compile error)",
        text: "# example.com/calc [example.com/calc.test]\n\
               ./calc.go:3:33: invalid operation: a + \"x\" (mismatched types int and untyped string)\n\
               FAIL\texample.com/calc [build failed]\n\
               ?   \texample.com/calc/p\t[no test files]\n\
               FAIL\n",
    },
    // go 1.19: go build ./... (a string added to an int)
    Case {
        pattern: "build-failed",
        from: "go build ./... (mismatched types)",
        text: "# example.com/calc\n./calc.go:3:33: invalid operation: a + \"x\" (mismatched types int and untyped string)\n",
    },
    // go 1.19: go build ./... (an unused import and an undefined name)
    Case {
        pattern: "build-failed",
        from: "go build ./... (unused import, undefined name)",
        text: "# example.com/calc\n./calc.go:3:8: imported and not used: \"fmt\"\n./calc.go:5:37: undefined: c\n",
    },
    // ---------------------------------------------------------------------- type-check-errors
    // TypeScript (npm typescript): npx tsc --noEmit bad.ts
    Case {
        pattern: "type-check-errors",
        from: "npx tsc --noEmit bad.ts",
        text: r#"bad.ts(1,7): error TS2322: Type 'string' is not assignable to type 'number'.
bad.ts(2,19): error TS2307: Cannot find module './nosuch' or its corresponding type declarations.
"#,
    },
    // TypeScript: npx tsc --noEmit --pretty bad.ts (the escape sequences as written)
    Case {
        pattern: "type-check-errors",
        from: "npx tsc --noEmit --pretty bad.ts",
        text: "\x1b[96mbad.ts\x1b[0m:\x1b[93m1\x1b[0m:\x1b[93m7\x1b[0m - \x1b[91merror\x1b[0m\x1b[90m TS2322: \x1b[0mType 'string' is not assignable to type 'number'.\n\
               \n\
               \x1b[7m1\x1b[0m const x: number = \"a\";\n\
               \x1b[7m \x1b[0m \x1b[91m      ~\x1b[0m\n",
    },
    // mypy 1.x: mypy m.py ok.py
    Case {
        pattern: "type-check-errors",
        from: "mypy m.py ok.py",
        text: r#"m.py:2: error: Incompatible return value type (got "int", expected "str")  [return-value]
m.py:4: error: Incompatible types in assignment (expression has type "str", variable has type "int")  [assignment]
Found 2 errors in 1 file (checked 2 source files)
"#,
    },
    // mypy 1.x: mypy --show-column-numbers m.py (the per-line errors alone)
    Case {
        pattern: "type-check-errors",
        from: "mypy --show-column-numbers m.py",
        text: r#"m.py:2:12: error: Incompatible return value type (got "int", expected "str")  [return-value]
"#,
    },
    // pyright (npm pyright): npx pyright m.py ok.py
    Case {
        pattern: "type-check-errors",
        from: "npx pyright m.py ok.py",
        text: r#"/tmp/ki/py/m.py
  /tmp/ki/py/m.py:2:12 - error: Type "int" is not assignable to return type "str"
    "int" is not assignable to "str" (reportReturnType)
  /tmp/ki/py/m.py:4:10 - error: Type "Literal['a']" is not assignable to declared type "int"
    "Literal['a']" is not assignable to "int" (reportAssignmentType)
2 errors, 0 warnings, 0 informations 
"#,
    },
    // rustc 1.95.0: cargo build, `let x: u32 = "a";`
    Case {
        pattern: "type-check-errors",
        from: "cargo build (mismatched types)",
        text: r#"error[E0308]: mismatched types
 --> src/main.rs:3:26
  |
3 | fn main() { let x: u32 = "a"; let _ = nosuchcrate::f(); }
  |                    ---   ^^^ expected `u32`, found `&str`
  |                    |
  |                    expected due to this
"#,
    },
    // -------------------------------------------------------------------------- test-failures
    // pytest 9: pytest (one of two tests fails)
    Case {
        pattern: "test-failures",
        from: "pytest",
        text: r#"test_calc.py:5: AssertionError
=========================== short test summary info ============================
FAILED test_calc.py::test_add - assert (1 + 1) == 3
========================= 1 failed, 1 passed in 0.02s ==========================
"#,
    },
    // pytest 9: pytest -q, the summary line alone (-q drops the === frame)
    Case {
        pattern: "test-failures",
        from: "pytest -q (summary line)",
        text: "1 failed, 1 passed in 0.02s\n",
    },
    // pytest 9: pytest --color=yes test_c.py (the escape sequences as written)
    Case {
        pattern: "test-failures",
        from: "pytest --color=yes test_c.py",
        text: "\x1b[31mFAILED\x1b[0m test_c.py::\x1b[1mtest_add\x1b[0m - assert (1 + 1) == 3\n\
               \x1b[31m============================== \x1b[31m\x1b[1m1 failed\x1b[0m\x1b[31m in 0.04s\x1b[0m\x1b[31m ===============================\x1b[0m\n",
    },
    // pytest 9: a collection error stops the run before any test
    Case {
        pattern: "test-failures",
        from: "pytest (collection interrupted)",
        text: "!!!!!!!!!!!!!!!!!!!! Interrupted: 1 error during collection !!!!!!!!!!!!!!!!!!!!\n",
    },
    // cargo 1.95.0: cargo test (assert_eq!(1 + 1, 3))
    Case {
        pattern: "test-failures",
        from: "cargo test",
        text: r#"failures:
    tests::adds

test result: FAILED. 1 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.15s

error: test failed, to rerun pass `--bin rp`
"#,
    },
    // jest (npm jest): npx jest calc.test.js
    Case {
        pattern: "test-failures",
        from: "npx jest calc.test.js",
        text: r#"      at Object.toBe (calc.test.js:1:36)

Test Suites: 1 failed, 1 total
Tests:       1 failed, 1 passed, 2 total
Snapshots:   0 total
Time:        0.283 s
Ran all test suites matching calc.test.js.
"#,
    },
    // mocha (npm mocha): npx mocha m.spec.js
    Case {
        pattern: "test-failures",
        from: "npx mocha m.spec.js",
        text: r#"

  calc
    1) adds
    ✔ ok


  1 passing (4ms)
  1 failing

  1) calc
       adds:

      AssertionError [ERR_ASSERTION]: Expected values to be strictly equal:

2 !== 3
"#,
    },
    // go 1.19: go test ./...
    Case {
        pattern: "test-failures",
        from: "go test ./...",
        text: "--- FAIL: TestAdd (0.00s)\n    calc_test.go:7: Add(1, 1) = 2, want 3\nFAIL\nFAIL\texample.com/calc\t0.005s\nFAIL\n",
    },
    // go 1.19: go test ./... (the package line alone)
    Case {
        pattern: "test-failures",
        from: "go test ./... (package line)",
        text: "FAIL\texample.com/calc\t0.003s\n",
    },
    // Apache Maven 3.8.7, surefire 2.22.3, JUnit 4.13.2: mvn -B -o test
    Case {
        pattern: "test-failures",
        from: "mvn -B -o test (surefire)",
        text: "[INFO] Running calc.CalcTest\n\
               [ERROR] Tests run: 2, Failures: 1, Errors: 0, Skipped: 0, Time elapsed: 0.052 s <<< FAILURE! - in calc.CalcTest\n\
               [ERROR] adds(calc.CalcTest)  Time elapsed: 0.007 s  <<< FAILURE!\n\
               java.lang.AssertionError: expected:<3> but was:<2>\n\
               \tat calc.CalcTest.adds(CalcTest.java:5)\n\
               \n",
    },
    // Apache Maven 3.8.7: mvn -B -o test (the results block)
    Case {
        pattern: "test-failures",
        from: "mvn -B -o test (results)",
        text: r#"[INFO] Results:
[INFO] 
[ERROR] Failures: 
[ERROR]   CalcTest.adds:5 expected:<3> but was:<2>
[INFO] 
[ERROR] Tests run: 2, Failures: 1, Errors: 0, Skipped: 0
"#,
    },
    // -------------------------------------------------------------------------- out-of-memory
    // Linux 6.18 kernel log (dmesg) after python3 outgrew a 64 MiB memory cgroup
    // (memory.limit_in_bytes); the memory statistics between these lines cut
    Case {
        pattern: "out-of-memory",
        from: "dmesg (memory cgroup OOM kill)",
        text: r#"[ 8062.367538] python3 invoked oom-killer: gfp_mask=0xcc0(GFP_KERNEL), order=0, oom_score_adj=0
[ 8062.367565] CPU: 1 UID: 0 PID: 392 Comm: python3 Not tainted 6.18.44-fc-v669 #1 PREEMPT(none) 
[ 8062.368074] oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,mems_allowed=0,oom_memcg=/kitest,task_memcg=/kitest,task=python3,pid=392,uid=0
[ 8062.368099] Memory cgroup out of memory: Killed process 392 (python3) total-vm:540856kB, anon-rss:65024kB, file-rss:6548kB, shmem-rss:0kB, UID:0 pgtables:188kB oom_score_adj:0
"#,
    },
    // The same kernel line alone: it is the one that names the process
    Case {
        pattern: "out-of-memory",
        from: "dmesg (the kill line alone)",
        text: "[ 8062.368099] Memory cgroup out of memory: Killed process 392 (python3) total-vm:540856kB, anon-rss:65024kB, file-rss:6548kB, shmem-rss:0kB, UID:0 pgtables:188kB oom_score_adj:0\n",
    },
    // The system-wide variant of that line: the same format string in mm/oom_kill.c, with
    // "Out of memory" in place of "Memory cgroup out of memory" (not reproduced here: it
    // takes exhausting the whole machine)
    Case {
        pattern: "out-of-memory",
        from: "dmesg (system-wide OOM kill, format of mm/oom_kill.c)",
        text: "[ 8062.368099] Out of memory: Killed process 392 (python3) total-vm:540856kB, anon-rss:65024kB, file-rss:6548kB, shmem-rss:0kB, UID:0 pgtables:188kB oom_score_adj:0\n",
    },
    // bash 5.2 running oom.sh, whose python3 the kernel killed in that cgroup
    Case {
        pattern: "out-of-memory",
        from: "bash oom.sh (child killed by the OOM killer)",
        text: "oom.sh: line 2:   392 Killed                  python3 -c 'x = bytearray(512*1024*1024); x[::4096] = b\"a\" * (len(x)//4096)'\n",
    },
    // Python 3.11.7: python3 -c 'x = bytearray(1<<62)'
    Case {
        pattern: "out-of-memory",
        from: "python3 -c 'x = bytearray(1<<62)'",
        text: r#"Traceback (most recent call last):
  File "<string>", line 1, in <module>
MemoryError
"#,
    },
    // Node.js v20.20.2: node --max-old-space-size=16 -e '...push(new Array(1e5))...'
    Case {
        pattern: "out-of-memory",
        from: "node --max-old-space-size=16 (heap exhausted)",
        text: r#"
<--- Last few GCs --->

[14089:0x150efe20]       33 ms: Mark-Compact 16.3 (32.8) -> 16.3 (32.8) MB, 2.08 / 0.00 ms  (average mu = 0.401, current mu = 0.225) allocation failure; scavenge might not succeed


<--- JS stacktrace --->

FATAL ERROR: Reached heap limit Allocation failed - JavaScript heap out of memory
----- Native stack trace -----
"#,
    },
    // g++ 12.2.0: ./e (std::vector<char>::reserve(1ULL << 62))
    Case {
        pattern: "out-of-memory",
        from: "./e (C++ reserve of 2^62 bytes)",
        text: "terminate called after throwing an instance of 'std::bad_alloc'\n  what():  std::bad_alloc\n",
    },
    // rustc 1.95.0: Vec::with_capacity(1 << 46) under ulimit -v 4000000 (backtrace cut)
    Case {
        pattern: "out-of-memory",
        from: "cargo build; ./target/debug/rp (Rust allocation failure)",
        text: r#"memory allocation of 70368744177664 bytes failed
stack backtrace:
   0: std::alloc::rust_oom
             at /rustc/59807616e1fa2540724bfbac14d7976d7e4a3860/library/std/src/alloc.rs:424:5
"#,
    },
    // go 1.19: a program appending 256 MiB slices under ulimit -v 3000000
    Case {
        pattern: "out-of-memory",
        from: "./p/oom (Go program out of memory)",
        text: r#"runtime: out of memory: cannot allocate 268435456-byte block (2151448576 in use)
fatal error: out of memory

goroutine 1 [running]:
"#,
    },
    // ------------------------------------------------------------------------------ disk-full
    // coreutils dd on a 64 KiB tmpfs: dd if=/dev/zero of=/tmp/ki/small/fill bs=1M count=1
    Case {
        pattern: "disk-full",
        from: "dd onto a full tmpfs",
        text: r#"dd: error writing '/tmp/ki/small/fill': No space left on device
1+0 records in
0+0 records out
65536 bytes (66 kB, 64 KiB) copied, 0.000577749 s, 113 MB/s
"#,
    },
    // Python 3.11.7 on the same tmpfs: open(...).write(b"a" * (1 << 20))
    Case {
        pattern: "disk-full",
        from: "python3 write onto a full tmpfs",
        text: r#"Traceback (most recent call last):
  File "<string>", line 1, in <module>
OSError: [Errno 28] No space left on device
"#,
    },
    // Node.js v20.20.2 on the same tmpfs: fs.writeFileSync(..., Buffer.alloc(1 << 20))
    Case {
        pattern: "disk-full",
        from: "node writeFileSync onto a full tmpfs",
        text: r#"node:internal/fs/utils:351
    throw err;
    ^

Error: ENOSPC: no space left on device, write
    at Object.writeSync (node:fs:933:3)
  code: 'ENOSPC'
"#,
    },
    // git 2.47.3 on the same tmpfs: git init small/repo
    Case {
        pattern: "disk-full",
        from: "git init on a full tmpfs",
        text: r#"error: copy-fd: write returned: No space left on device
fatal: cannot copy '/usr/local/share/git-core/templates/hooks/applypatch-msg.sample' to '/tmp/ki/small/repo/.git/hooks/applypatch-msg.sample': No space left on device
"#,
    },
    // Python 3.11.7 printing EDQUOT as the OS words it (this kernel has no quota support to
    // hit it for real): python3 -c 'import errno, os; raise OSError(errno.EDQUOT,
    // os.strerror(errno.EDQUOT), "/home/agent/x")'
    Case {
        pattern: "disk-full",
        from: "python3 raising OSError(EDQUOT)",
        text: "OSError: [Errno 122] Disk quota exceeded: '/home/agent/x'\n",
    },
    // -------------------------------------------------------------------------- network-error
    // curl 7.88.1: curl -sS http://127.0.0.1:9/ (nothing listening)
    Case {
        pattern: "network-error",
        from: "curl -sS http://127.0.0.1:9/",
        text: "curl: (7) Failed to connect to 127.0.0.1 port 9 after 0 ms: Couldn't connect to server\n",
    },
    // curl 7.88.1: curl -sS https://nosuchhost.invalid/
    Case {
        pattern: "network-error",
        from: "curl -sS https://nosuchhost.invalid/",
        text: "curl: (6) Could not resolve host: nosuchhost.invalid\n",
    },
    // curl 7.88.1: curl -sS --max-time 1 against a local server that answers after 3 s
    Case {
        pattern: "network-error",
        from: "curl -sS --max-time 1 (slow local server)",
        text: "curl: (28) Operation timed out after 1001 milliseconds with 0 bytes received\n",
    },
    // OpenSSH 9.2: ssh -p 9 127.0.0.1 true
    Case {
        pattern: "network-error",
        from: "ssh -p 9 127.0.0.1 true",
        text: "ssh: connect to host 127.0.0.1 port 9: Connection refused\n",
    },
    // OpenSSH 9.2: ssh nosuchhost.invalid true
    Case {
        pattern: "network-error",
        from: "ssh nosuchhost.invalid true",
        text: "ssh: Could not resolve hostname nosuchhost.invalid: Name or service not known\n",
    },
    // git 2.47.3: git clone https://nosuchhost.invalid/x/y.git
    Case {
        pattern: "network-error",
        from: "git clone https://nosuchhost.invalid/x/y.git",
        text: "Cloning into 'y'...\nfatal: unable to access 'https://nosuchhost.invalid/x/y.git/': Could not resolve host: nosuchhost.invalid\n",
    },
    // Node.js v20.20.2: node -e 'require("http").get("http://127.0.0.1:9/")'
    Case {
        pattern: "network-error",
        from: "node http.get(\"http://127.0.0.1:9/\")",
        text: r#"Error: connect ECONNREFUSED 127.0.0.1:9
    at TCPConnectWrap.afterConnect [as oncomplete] (node:net:1611:16)
Emitted 'error' event on ClientRequest instance at:
    at emitErrorEvent (node:_http_client:101:11)
  errno: -111,
  code: 'ECONNREFUSED',
  syscall: 'connect',
  address: '127.0.0.1',
  port: 9
}
"#,
    },
    // Node.js v20.20.2: node -e 'require("http").get("http://nosuchhost.invalid/")'
    Case {
        pattern: "network-error",
        from: "node http.get(\"http://nosuchhost.invalid/\")",
        text: r#"Error: getaddrinfo ENOTFOUND nosuchhost.invalid
    at GetAddrInfoReqWrap.onlookupall [as oncomplete] (node:dns:122:26)
"#,
    },
    // Node.js v20.20.2 in a network namespace of its own (unshare -n), no DNS
    Case {
        pattern: "network-error",
        from: "unshare -n node https.get(\"https://registry.npmjs.org/\")",
        text: "Error: getaddrinfo EAI_AGAIN registry.npmjs.org\n    at GetAddrInfoReqWrap.onlookupall [as oncomplete] (node:dns:122:26)\n  code: 'EAI_AGAIN',\n",
    },
    // Node.js v20.20.2: fetch("http://127.0.0.1:5997/") (nothing listening)
    Case {
        pattern: "network-error",
        from: "node fetch(\"http://127.0.0.1:5997/\")",
        text: r#"TypeError: fetch failed
    at node:internal/deps/undici/undici:14976:13
    at process.processTicksAndRejections (node:internal/process/task_queues:95:5) {
  [cause]: Error: connect ECONNREFUSED 127.0.0.1:5997
      at TCPConnectWrap.afterConnect [as oncomplete] (node:net:1611:16) {
"#,
    },
    // npm 11.19.1 in a network namespace of its own: unshare -n npm install left-pad
    Case {
        pattern: "network-error",
        from: "unshare -n npm install left-pad",
        text: r#"npm error code EAI_AGAIN
npm error syscall getaddrinfo
npm error errno EAI_AGAIN
npm error request to https://registry.npmjs.org/left-pad failed, reason: getaddrinfo EAI_AGAIN registry.npmjs.org
"#,
    },
    // Python 3.11.7: socket.create_connection(("127.0.0.1", 9)) (last line)
    Case {
        pattern: "network-error",
        from: "python3 socket.create_connection((\"127.0.0.1\", 9))",
        text: "ConnectionRefusedError: [Errno 111] Connection refused\n",
    },
    // Python 3.11.7: urllib.request.urlopen("http://nosuchhost.invalid/") (last line)
    Case {
        pattern: "network-error",
        from: "python3 urlopen(\"http://nosuchhost.invalid/\")",
        text: "urllib.error.URLError: <urlopen error [Errno -2] Name or service not known>\n",
    },
    // Python 3.11.7 under unshare -n: urlopen("https://pypi.org/") (last line)
    Case {
        pattern: "network-error",
        from: "unshare -n python3 urlopen(\"https://pypi.org/\")",
        text: "urllib.error.URLError: <urlopen error [Errno -3] Temporary failure in name resolution>\n",
    },
    // Python 3.11.7: urlopen(<local server answering after 3 s>, timeout=1) (last line)
    Case {
        pattern: "network-error",
        from: "python3 urlopen(..., timeout=1) (slow local server)",
        text: "TimeoutError: timed out\n",
    },
    // requests 2.34.2: requests.get(<slow local server>, timeout=1) (last line)
    Case {
        pattern: "network-error",
        from: "python3 requests.get(..., timeout=1)",
        text: "requests.exceptions.ReadTimeout: HTTPConnectionPool(host='127.0.0.1', port=5998): Read timed out. (read timeout=1)\n",
    },
    // Python 3.11.7 under unshare -n: socket.create_connection(("192.0.2.1", 80)) (last line)
    Case {
        pattern: "network-error",
        from: "unshare -n python3 socket.create_connection((\"192.0.2.1\", 80))",
        text: "OSError: [Errno 101] Network is unreachable\n",
    },
    // Node.js v20.20.2 under unshare -n: node -e 'require("net").connect(80, "192.0.2.1")'
    Case {
        pattern: "network-error",
        from: "unshare -n node net.connect(80, \"192.0.2.1\")",
        text: r#"Error: connect ENETUNREACH 192.0.2.1:80 - Local (0.0.0.0:0)
    at internalConnect (node:net:1098:16)
    at defaultTriggerAsyncIdScope (node:internal/async_hooks:464:18)
    at node:net:1328:9
  code: 'ENETUNREACH',
"#,
    },
    // Docker Engine 20.10.24: docker pull localhost:5999/nosuch (nothing listening); the
    // daemon's Go resolver and dialer word errors in lower case
    Case {
        pattern: "network-error",
        from: "docker pull localhost:5999/nosuch",
        text: "Using default tag: latest\nError response from daemon: Get \"http://localhost:5999/v2/\": dial tcp 127.0.0.1:5999: connect: connection refused\n",
    },
    // Docker Engine 20.10.24: docker pull nosuchimage-xyz (no route to the registry's DNS)
    Case {
        pattern: "network-error",
        from: "docker pull nosuchimage-xyz",
        text: "Using default tag: latest\nError response from daemon: Get \"https://registry-1.docker.io/v2/\": dial tcp: lookup registry-1.docker.io on 10.255.255.53:53: no such host\n",
    },
    // ------------------------------------------------------------------------ container-error
    // Docker CLI 28.2.2, no daemon: docker ps; docker run --rm alpine true
    Case {
        pattern: "container-error",
        from: "docker ps (no daemon)",
        text: r#"Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?
docker: Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?

Run 'docker run --help' for more information
"#,
    },
    // Docker CLI 28.2.2, Engine 20.10.24 (runc 1.1.5): docker run --rm --network none bb nosuchbinary
    Case {
        pattern: "container-error",
        from: "docker run --rm --network none bb nosuchbinary",
        text: r#"docker: Error response from daemon: failed to create shim task: OCI runtime create failed: runc create failed: unable to start container process: exec: "nosuchbinary": executable file not found in $PATH: unknown

Run 'docker run --help' for more information
"#,
    },
    // Docker CLI 28.2.2: docker rm nosuchcontainer
    Case {
        pattern: "container-error",
        from: "docker rm nosuchcontainer",
        text: "Error response from daemon: No such container: nosuchcontainer\n",
    },
    // Docker Engine 20.10.24: docker pull localhost:5999/nosuch, against a local stand-in
    // registry that answers 401 DENIED for every manifest
    Case {
        pattern: "container-error",
        from: "docker pull localhost:5999/nosuch (registry denies)",
        text: "Using default tag: latest\nError response from daemon: pull access denied for localhost:5999/nosuch, repository does not exist or may require 'docker login': denied: requested access to the resource is denied\n",
    },
    // Docker CLI 28.2.2 as nobody, the socket root:root 0660: docker ps
    Case {
        pattern: "container-error",
        from: "docker ps as a user outside the docker group",
        text: "permission denied while trying to connect to the Docker daemon socket at unix:///tmp/ki/dockerd/docker.sock: Get \"http://%2Ftmp%2Fki%2Fdockerd%2Fdocker.sock/v1.50/containers/json\": dial unix /tmp/ki/dockerd/docker.sock: connect: permission denied\n",
    },
    // kubectl get pods, the STATUS column kubectl shows for a pod whose image cannot be pulled
    // (not reproduced here: there is no cluster)
    Case {
        pattern: "container-error",
        from: "kubectl get pods",
        text: "NAME                   READY   STATUS             RESTARTS   AGE\nweb-7d4b9c6f5d-x2k8q   0/1     ImagePullBackOff   0          2m14s\n",
    },
    // ----------------------------------------------------------------------- api-rate-limited
    // Claude Code 2.1.197: claude -p "say hi", ANTHROPIC_BASE_URL pointing at a local
    // stand-in answering 429 with the Messages API's rate_limit_error body
    Case {
        pattern: "api-rate-limited",
        from: "claude -p (2.1.197, HTTP 429)",
        text: "API Error: Request rejected (429) · This request would exceed the rate limit for your organization (4f2c8e1a-0b7d-4c55-9a3e-6d1f2b8c7e90) of 50,000 input tokens per minute. For details, refer to: https://docs.claude.com/en/api/rate-limits. You can see the response headers for current usage. Please reduce the prompt length or the maximum tokens requested, or try again later. You may also contact sales at https://www.anthropic.com/contact-sales to discuss your options for a rate limit increase.\n",
    },
    // Claude Code 2.1.197: the same, the stand-in answering 529 overloaded_error
    Case {
        pattern: "api-rate-limited",
        from: "claude -p (2.1.197, HTTP 529)",
        text: "API Error: 529 Overloaded. This is a server-side issue, usually temporary — try again in a moment. If it persists, check your inference gateway (127.0.0.1:5996).\n",
    },
    // Claude Code 1.0.100 (cli.js): claude -p "say hi", the stand-in answering 429
    Case {
        pattern: "api-rate-limited",
        from: "claude -p (1.0.100, HTTP 429)",
        text: r#"API Error: 429 {"type":"error","error":{"type":"rate_limit_error","message":"This request would exceed the rate limit for your organization (4f2c8e1a-0b7d-4c55-9a3e-6d1f2b8c7e90) of 50,000 input tokens per minute. For details, refer to: https://docs.claude.com/en/api/rate-limits. You can see the response headers for current usage. Please reduce the prompt length or the maximum tokens requested, or try again later. You may also contact sales at https://www.anthropic.com/contact-sales to discuss your options for a rate limit increase."},"request_id":"req_011CT3bR2mD8sJ4qLw6eUfTc"}
"#,
    },
    // Claude Code 1.0.100: the stand-in answering 529
    Case {
        pattern: "api-rate-limited",
        from: "claude -p (1.0.100, HTTP 529)",
        text: r#"API Error: 529 {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"req_011CT3bS5nF1tK7rMx9gVhWd"}
"#,
    },
    // The Messages API's overloaded body on its own, as a tool that logs the response prints it
    Case {
        pattern: "api-rate-limited",
        from: "Messages API error body (HTTP 529)",
        text: r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}
"#,
    },
    // Claude Code 2.1.197: claude -p "say hi" --output-format stream-json --verbose, HTTP 429
    // (the result line)
    Case {
        pattern: "api-rate-limited",
        from: "claude -p --output-format stream-json (2.1.197, HTTP 429)",
        text: r#"{"type":"result","subtype":"success","is_error":true,"api_error_status":429,"duration_ms":122,"duration_api_ms":0,"num_turns":1,"result":"API Error: Request rejected (429) · This request would exceed the rate limit for your organization (4f2c8e1a-0b7d-4c55-9a3e-6d1f2b8c7e90) of 50,000 input tokens per minute. For details, refer to: https://docs.claude.com/en/api/rate-limits. You can see the response headers for current usage. Please reduce the prompt length or the maximum tokens requested, or try again later. You may also contact sales at https://www.anthropic.com/contact-sales to discuss your options for a rate limit increase.","stop_reason":"stop_sequence","session_id":"e02124f8-602c-4c9e-bcb9-a8ce53f90d65","total_cost_usd":0,"usage":{"input_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":0,"server_tool_use":{"web_search_requests":0,"web_fetch_requests":0},"service_tier":"standard","cache_creation":{"ephemeral_1h_input_tokens":0,"ephemeral_5m_input_tokens":0},"inference_geo":"","iterations":[],"speed":"standard"},"modelUsage":{},"permission_denials":[],"terminal_reason":"completed","fast_mode_state":"off","uuid":"36214909-5ec4-4e3c-bfd2-45265b9d563e"}
"#,
    },
    // Claude Code 2.1.197: the same, HTTP 529 (the result line)
    Case {
        pattern: "api-rate-limited",
        from: "claude -p --output-format stream-json (2.1.197, HTTP 529)",
        text: r#"{"type":"result","subtype":"success","is_error":true,"api_error_status":529,"duration_ms":125,"duration_api_ms":0,"num_turns":1,"result":"API Error: 529 Overloaded. This is a server-side issue, usually temporary — try again in a moment. If it persists, check your inference gateway (127.0.0.1:5996).","stop_reason":"stop_sequence","session_id":"baa62edf-765f-4dda-a66c-e57c2e172819","total_cost_usd":0,"usage":{"input_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":0,"server_tool_use":{"web_search_requests":0,"web_fetch_requests":0},"service_tier":"standard","cache_creation":{"ephemeral_1h_input_tokens":0,"ephemeral_5m_input_tokens":0},"inference_geo":"","iterations":[],"speed":"standard"},"modelUsage":{},"permission_denials":[],"terminal_reason":"completed","fast_mode_state":"off","uuid":"4d84c740-a431-401c-a306-0e0db3ad0d0f"}
"#,
    },
    // The OpenAI API's quota error body, as its documentation gives it (not reproduced here)
    Case {
        pattern: "api-rate-limited",
        from: "OpenAI API error body (HTTP 429, insufficient_quota)",
        text: r#"{"error": {"message": "You exceeded your current quota, please check your plan and billing details. For more information on this error, read the docs: https://platform.openai.com/docs/guides/error-codes/api-errors.", "type": "insufficient_quota", "param": null, "code": "insufficient_quota"}}
"#,
    },
    // A Google API's quota error, as Google's client libraries print it (not reproduced here)
    Case {
        pattern: "api-rate-limited",
        from: "Google API error (HTTP 429, quota metric)",
        text: "429 Quota exceeded for quota metric 'Generate Content API requests per minute' and limit 'GenerateContent request limit per minute for a region' of service 'generativelanguage.googleapis.com' for consumer 'project_number:123456789012'.\n",
    },
    // ------------------------------------------------------------------ authentication-failed
    // Claude Code 1.0.100 with no key and no login: claude -p hi
    Case {
        pattern: "claude-not-logged-in",
        from: "claude -p hi (1.0.100, no credentials)",
        text: "Invalid API key · Please run /login\n",
    },
    // Claude Code 2.1.197 with no key and no login: claude -p hi
    Case {
        pattern: "claude-not-logged-in",
        from: "claude -p hi (2.1.197, no credentials)",
        text: "Not logged in · Please run /login\n",
    },
    // Claude Code 2.1.197 with ANTHROPIC_API_KEY set, the stand-in answering 401
    // authentication_error: claude -p "say hi"
    Case {
        pattern: "authentication-failed",
        from: "claude -p (2.1.197, HTTP 401)",
        text: "Invalid API key · Fix external API key\n",
    },
    // Claude Code 2.1.197: the same with --output-format stream-json --verbose (result line)
    Case {
        pattern: "authentication-failed",
        from: "claude -p --output-format stream-json (2.1.197, HTTP 401)",
        text: r#"{"type":"result","subtype":"success","is_error":true,"api_error_status":401,"duration_ms":122,"duration_api_ms":0,"num_turns":1,"result":"Invalid API key · Fix external API key","stop_reason":"stop_sequence","session_id":"7f3fd956-17f5-4c72-b2ea-c53d8f953425","total_cost_usd":0,"usage":{"input_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":0,"server_tool_use":{"web_search_requests":0,"web_fetch_requests":0},"service_tier":"standard","cache_creation":{"ephemeral_1h_input_tokens":0,"ephemeral_5m_input_tokens":0},"inference_geo":"","iterations":[],"speed":"standard"},"modelUsage":{},"permission_denials":[],"terminal_reason":"completed","fast_mode_state":"off","uuid":"5f46a269-a3b8-40d0-ab6f-5992f53173e6"}
"#,
    },
    // The Messages API's 401 body, as the stand-in served it
    Case {
        pattern: "authentication-failed",
        from: "Messages API error body (HTTP 401)",
        text: r#"{"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}, "request_id": "req_011CT3bQ9xW7k2pXhN5aYvRz"}
"#,
    },
    // OpenSSH 9.2 against a local sshd accepting no key: ssh -o BatchMode=yes -p 2222 git@127.0.0.1 true
    Case {
        pattern: "authentication-failed",
        from: "ssh -p 2222 git@127.0.0.1 true (key refused)",
        text: "Warning: Permanently added '[127.0.0.1]:2222' (ED25519) to the list of known hosts.\ngit@127.0.0.1: Permission denied (publickey).\n",
    },
    // git 2.47.3 over the same sshd: git clone git@127.0.0.1:org/repo.git
    Case {
        pattern: "authentication-failed",
        from: "git clone git@127.0.0.1:org/repo.git (key refused)",
        text: r#"Cloning into 'sshclone'...
git@127.0.0.1: Permission denied (publickey).
fatal: Could not read from remote repository.

Please make sure you have the correct access rights
and the repository exists.
"#,
    },
    // git 2.47.3 against a local HTTP server answering 401: GIT_TERMINAL_PROMPT=0 git clone
    // http://agent:wrongtoken@127.0.0.1:5998/org/repo.git
    Case {
        pattern: "authentication-failed",
        from: "git clone http://agent:wrongtoken@127.0.0.1:5998/org/repo.git",
        text: "Cloning into 'h1'...\nfatal: Authentication failed for 'http://127.0.0.1:5998/org/repo.git/'\n",
    },
    // git 2.47.3, the same server, no credentials: GIT_TERMINAL_PROMPT=0 git clone http://127.0.0.1:5998/org/repo.git
    Case {
        pattern: "authentication-failed",
        from: "GIT_TERMINAL_PROMPT=0 git clone http://127.0.0.1:5998/org/repo.git",
        text: "Cloning into 'h2'...\nfatal: could not read Username for 'http://127.0.0.1:5998': terminal prompts disabled\n",
    },
    // Python 3.11.7, the same server: urllib.request.urlopen("http://127.0.0.1:5998/") (last line)
    Case {
        pattern: "authentication-failed",
        from: "python3 urlopen (HTTP 401)",
        text: "urllib.error.HTTPError: HTTP Error 401: Unauthorized\n",
    },
    // curl 7.88.1, the same server: curl -sS -i http://127.0.0.1:5998/v1/messages (head)
    Case {
        pattern: "authentication-failed",
        from: "curl -sS -i (HTTP 401)",
        text: "HTTP/1.0 401 Unauthorized\nServer: BaseHTTP/0.6 Python/3.11.7\n",
    },
    // curl 7.88.1, the same server: curl -sS -f http://127.0.0.1:5998/
    Case {
        pattern: "authentication-failed",
        from: "curl -sS -f (HTTP 401)",
        text: "curl: (22) The requested URL returned error: 401\n",
    },
    // Claude Code 2.1.197 as luzia renders its stream-json (--output-format stream-json
    // --verbose): the result line of a run the stand-in answered 401, 429 and 529
    Case {
        pattern: "authentication-failed",
        from: "luzia's rendering of claude -p stream-json (2.1.197, HTTP 401)",
        text: "── failed (API error 401): Invalid API key · Fix external API key · 1 turn · 0.1s · 0 in / 0 out / 0 cache read / 0 cache write tokens · $0.0000\n",
    },
    Case {
        pattern: "api-rate-limited",
        from: "luzia's rendering of claude -p stream-json (2.1.197, HTTP 429)",
        text: "── failed (API error 429): API Error: Request rejected (429) · This request would exceed your account's rate limit. Please try again later. · 1 turn · 0.1s · 0 in / 0 out / 0 cache read / 0 cache write tokens · $0.0000\n",
    },
    Case {
        pattern: "api-rate-limited",
        from: "luzia's rendering of claude -p stream-json (2.1.197, HTTP 529)",
        text: "── failed (API error 529): API Error: 529 Overloaded. This is a server-side issue, usually temporary — try again in a moment. If it persists, check your inference gateway (127.0.0.1:5904). · 1 turn · 0.1s · 0 in / 0 out / 0 cache read / 0 cache write tokens · $0.0000\n",
    },
    // ------------------------------------------------------------------- claude-not-logged-in
    // Claude Code 2.1.332 with no key and no login, in a fresh HOME: claude -p "say hi"
    Case {
        pattern: "claude-not-logged-in",
        from: "claude -p (2.1.332, no credentials)",
        text: "Not logged in · Please run /login\n",
    },
    // Claude Code 2.1.197 and 2.1.332 with ANTHROPIC_API_KEY set, the stand-in answering 401
    // authentication_error: claude -p "say hi"
    Case {
        pattern: "claude-not-logged-in",
        from: "claude -p (2.1.197 and 2.1.332, HTTP 401)",
        text: "Invalid API key · Fix external API key\n",
    },
    // Claude Code 2.1.332, no credentials: claude -p --output-format stream-json --verbose
    // (the assistant's line)
    Case {
        pattern: "claude-not-logged-in",
        from: "claude -p --output-format stream-json (2.1.332, no credentials)",
        text: r#"{"type":"assistant","message":{"diagnostics":null,"id":"7735bc40-937a-4773-a041-19dca179ea5c","container":null,"model":"<synthetic>","role":"assistant","stop_details":null,"stop_reason":"stop_sequence","stop_sequence":"","type":"message","usage":{"output_tokens_details":null,"input_tokens":0,"output_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"server_tool_use":{"web_search_requests":0,"web_fetch_requests":0},"service_tier":null,"cache_creation":{"ephemeral_1h_input_tokens":0,"ephemeral_5m_input_tokens":0},"inference_geo":null,"iterations":null,"speed":null,"fallback_credit":null},"content":[{"type":"text","text":"Not logged in · Please run /login"}],"context_management":null},"parent_tool_use_id":null,"session_id":"7c2fb69a-2ed4-428a-bda7-c425e87a7bce","uuid":"71c99303-cec3-4038-bd1b-4cfd938582ef","timestamp":"2026-12-04T10:14:09.663Z","error":"authentication_failed","is_api_error_message":true}
"#,
    },
    // Claude Code 2.1.197, HTTP 401, CLAUDE_CODE_MAX_RETRIES=1: the retry line of its stream-json
    Case {
        pattern: "claude-not-logged-in",
        from: "claude -p --output-format stream-json (2.1.197, HTTP 401, a retry)",
        text: r#"{"type":"system","subtype":"api_retry","attempt":1,"max_retries":1,"retry_delay_ms":536.4355995065324,"error_status":401,"error":"authentication_failed","session_id":"196f627c-0edc-4fa6-a372-0b4dfac9d9ed","uuid":"6d118d1f-c2b1-44db-9e11-52184090674e"}
"#,
    },
    // The same runs as luzia renders them
    Case {
        pattern: "claude-not-logged-in",
        from: "luzia's rendering of claude -p stream-json (2.1.332, no credentials)",
        text: "── failed: Not logged in · Please run /login · 1 turn · 0.2s · 0 in / 0 out / 0 cache read / 0 cache write tokens · $0.0000\n",
    },
    Case {
        pattern: "claude-not-logged-in",
        from: "luzia's rendering of claude -p stream-json (2.1.197, HTTP 401)",
        text: "  ↻ API error 401 (authentication_failed); retry 1 of 1 in 0.5s\n── failed (API error 401): Invalid API key · Fix external API key · 1 turn · 0.9s · 0 in / 0 out / 0 cache read / 0 cache write tokens · $0.0000\n",
    },
    // ------------------------------------------------------------------ claude-credit-balance
    // Claude Code 2.1.197: claude -p "hi", the stand-in answering 400 invalid_request_error
    // "Your credit balance is too low to access the Anthropic API..." (it prints no newline)
    Case {
        pattern: "claude-credit-balance",
        from: "claude -p (2.1.197, HTTP 400 credit balance)",
        text: "Credit balance is too low",
    },
    // The same with --output-format stream-json --verbose, as luzia renders it
    Case {
        pattern: "claude-credit-balance",
        from: "luzia's rendering of claude -p stream-json (2.1.197, HTTP 400 credit balance)",
        text: "── failed (API error 400): Credit balance is too low · 1 turn · 0.2s · 0 in / 0 out / 0 cache read / 0 cache write tokens · $0.0000\n",
    },
    // The Messages API's own words, as a tool that prints the response body shows them
    Case {
        pattern: "claude-credit-balance",
        from: "Messages API error body (HTTP 400, credit balance)",
        text: r#"{"type":"error","error":{"type":"invalid_request_error","message":"Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits."}}
"#,
    },
    // --------------------------------------------------------------------- claude-usage-limit
    // Claude Code 2.1.197 logged in to a subscription (CLAUDE_CODE_OAUTH_TOKEN): claude -p "hi",
    // the stand-in answering 429 with anthropic-ratelimit-unified-status: rejected,
    // -reset: 1795453200, -representative-claim: five_hour
    Case {
        pattern: "claude-usage-limit",
        from: "claude -p (2.1.197, subscription, five-hour limit)",
        text: "You've hit your session limit · resets 5pm (UTC)\n",
    },
    // The same with --output-format stream-json --verbose, as luzia renders it
    Case {
        pattern: "claude-usage-limit",
        from: "luzia's rendering of claude -p stream-json (2.1.197, subscription, five-hour limit)",
        text: "── failed (API error 429): You've hit your session limit · resets 5pm (UTC) · 1 turn · 0.1s · 0 in / 0 out / 0 cache read / 0 cache write tokens · $0.0000\n",
    },
    // Claude Code 2.1.332, the same stand-in (-reset: 1796398632): it calls the five-hour
    // window by its length
    Case {
        pattern: "claude-usage-limit",
        from: "claude -p (2.1.332, subscription, five-hour limit)",
        text: "You've hit your 5-hour limit · resets 3:37pm (UTC)\n",
    },
    Case {
        pattern: "claude-usage-limit",
        from: "luzia's rendering of claude -p stream-json (2.1.332, subscription, five-hour limit)",
        text: "── failed (API error 429): You've hit your 5-hour limit · resets 3:37pm (UTC) · 1 turn · 0.2s · 0 in / 0 out / 0 cache read / 0 cache write tokens · $0.0000\n",
    },
    // Claude Code 2.1.197's message for a weekly limit (its template, not reproduced here)
    Case {
        pattern: "claude-usage-limit",
        from: "claude -p (2.1.197, subscription, weekly limit)",
        text: "You've hit your weekly limit · resets Nov 30, 9am (UTC)\n",
    },
    // Claude Code 1.x printed the reset time as an epoch; luzia's rendering puts it in words
    Case {
        pattern: "claude-usage-limit",
        from: "claude -p (1.x, subscription), as luzia renders it",
        text: "✗ Claude AI usage limit reached (resets 2026-11-23 17:00 UTC)\n",
    },
    // ------------------------------------------------------------------ claude-bypass-as-root
    // Claude Code 2.1.197 as root without IS_SANDBOX: claude -p --output-format stream-json
    // --verbose --dangerously-skip-permissions (stderr; nothing on stdout, exit 1)
    Case {
        pattern: "claude-bypass-as-root",
        from: "claude -p --dangerously-skip-permissions as root (2.1.197)",
        text: "--dangerously-skip-permissions cannot be used with root/sudo privileges for security reasons\n",
    },
    // ------------------------------------------------------------------- claude-not-installed
    // luzia run with [agent] command = ["claude", ...] where no claude is on PATH
    Case {
        pattern: "claude-not-installed",
        from: "luzia's supervisor, claude not on PATH",
        text: "luzia: cannot start the agent \"claude\": No such file or directory (os error 2)\n\nexit:127\n",
    },
    Case {
        pattern: "claude-not-installed",
        from: "luzia's supervisor, a full path to claude that does not exist",
        text: "luzia: cannot start the agent \"/opt/claude-code/bin/claude\": No such file or directory (os error 2)\n",
    },
    // ------------------------------------------------------------------- claude-not-reachable
    // luzia run as root for a project with `user =`, claude only under /root (mode 700)
    Case {
        pattern: "claude-not-reachable",
        from: "luzia's supervisor, claude in a directory closed to the project's user",
        text: "luzia: cannot start the agent \"claude\": Permission denied (os error 13)\n\nexit:127\n",
    },
    // -------------------------------------------------------------- luzia-mcp-not-reachable
    // Claude Code 2.1.197 as a project's user, mcp.json naming a luzia under /root/.cargo/bin
    Case {
        pattern: "luzia-mcp-not-reachable",
        from: "claude -p with --permission-prompt-tool whose MCP server cannot start (2.1.197)",
        text: "Error: MCP tool mcp__luzia__permission (passed via --permission-prompt-tool) not found. Available MCP tools: none\n\nexit:1\n",
    },
    // ---------------------------------------------------------------------- corrupted-config
    // Python 3.11.7: python3 -c 'import json; json.load(open("bad.json"))' (bad.json: `{"a":`)
    Case {
        pattern: "corrupted-config",
        from: "python3 json.load of a truncated file",
        text: r#"Traceback (most recent call last):
  File "<string>", line 1, in <module>
  File "/root/.pyenv/versions/3.11.7/lib/python3.11/json/__init__.py", line 293, in load
    return loads(fp.read(),
           ^^^^^^^^^^^^^^^^
  File "/root/.pyenv/versions/3.11.7/lib/python3.11/json/decoder.py", line 355, in raw_decode
    raise JSONDecodeError("Expecting value", s, err.value) from None
json.decoder.JSONDecodeError: Expecting value: line 2 column 1 (char 6)
"#,
    },
    // Node.js v20.20.2: JSON.parse of `{"a": 1,}` read from bad.json
    Case {
        pattern: "corrupted-config",
        from: "node JSON.parse(readFileSync(\"bad.json\"))",
        text: r#"<anonymous_script>:1
{"a": 1,}
        ^

SyntaxError: Expected double-quoted property name in JSON at position 8
    at JSON.parse (<anonymous>)
    at [eval]:1:6
"#,
    },
    // Node.js v20.20.2: node -e 'JSON.parse("")'
    Case {
        pattern: "corrupted-config",
        from: "node -e 'JSON.parse(\"\")'",
        text: "<anonymous_script>:1\n\n\nSyntaxError: Unexpected end of JSON input\n    at JSON.parse (<anonymous>)\n",
    },
    // Node.js v20.20.2: node -e 'require("./bad.json")'
    Case {
        pattern: "corrupted-config",
        from: "node -e 'require(\"./bad.json\")'",
        text: r#"node:internal/modules/cjs/loader:1644
    throw err;
    ^

SyntaxError: /tmp/ki/bad.json: Expected double-quoted property name in JSON at position 8
    at parse (<anonymous>)
    at Module._extensions..json (node:internal/modules/cjs/loader:1641:39)
"#,
    },
    // npm 11.19.1: npm install, package.json being `{"name": "x",`
    Case {
        pattern: "corrupted-config",
        from: "npm install (truncated package.json)",
        text: r#"npm error code EJSONPARSE
npm error JSON.parse Invalid package.json: JSONParseError: Expected double-quoted property name in JSON at position 14 while parsing "{\"name\": \"x\",\n"
npm error JSON.parse Failed to parse JSON data.
npm error JSON.parse Note: package.json must be actual JSON, not just JavaScript.
"#,
    },
    // PyYAML 6.0.3: yaml.safe_load of "a: b\n  c: d\n" (the traceback's end)
    Case {
        pattern: "corrupted-config",
        from: "python3 yaml.safe_load (mapping values)",
        text: r#"    raise ScannerError(None, None,
yaml.scanner.ScannerError: mapping values are not allowed here
  in "bad.yaml", line 2, column 4
"#,
    },
    // PyYAML 6.0.3: yaml.safe_load of "a: [1, 2\nb: 3\n" (the traceback's end)
    Case {
        pattern: "corrupted-config",
        from: "python3 yaml.safe_load (unclosed flow sequence)",
        text: r#"yaml.parser.ParserError: while parsing a flow sequence
  in "bad2.yaml", line 1, column 4
expected ',' or ']', but got ':'
  in "bad2.yaml", line 2, column 2
"#,
    },
    // js-yaml 4 (npm): node -e 'require("js-yaml").load(readFileSync("bad.yaml", "utf8"))'
    Case {
        pattern: "corrupted-config",
        from: "node js-yaml load (bad indentation)",
        text: r#"/tmp/ki/npmproj/node_modules/js-yaml/dist/js-yaml.cjs.js:1294
		throw new YAMLException(message, mark);
		^

YAMLException: bad indentation of a mapping entry (2:4)

 1 | a: b
 2 |   c: d
--------^
"#,
    },
    // toml 1.2.1 (Rust crate): eprintln!("Error: {e}") for "a = \n".parse::<toml::Table>()
    Case {
        pattern: "corrupted-config",
        from: "Rust toml::Table parse error",
        text: r#"Error: TOML parse error at line 1, column 5
  |
1 | a = 
  |     ^
string values must be quoted, expected literal string
"#,
    },
    // cargo 1.95.0: cargo build with `version = "0.1.0` (unclosed) in Cargo.toml
    Case {
        pattern: "corrupted-config",
        from: "cargo build (broken Cargo.toml)",
        text: r#"error: invalid basic string, expected `"`
 --> Cargo.toml:3:17
  |
3 | version = "0.1.0
  |                 ^
"#,
    },
    // Python 3.11.7: tomllib.loads("a = \n") (last line)
    Case {
        pattern: "corrupted-config",
        from: "python3 tomllib.loads",
        text: "tomllib.TOMLDecodeError: Invalid value (at line 1, column 5)\n",
    },
    // -------------------------------------------------------------------------- git-conflict
    // git 2.47.3: git merge other (both branches changed f.txt)
    Case {
        pattern: "git-conflict",
        from: "git merge other",
        text: "Auto-merging f.txt\nCONFLICT (content): Merge conflict in f.txt\nAutomatic merge failed; fix conflicts and then commit the result.\n",
    },
    // git 2.47.3: git status during that merge
    Case {
        pattern: "git-conflict",
        from: "git status (unmerged)",
        text: "On branch main\nYou have unmerged paths.\n  (fix conflicts and run \"git commit\")\n  (use \"git merge --abort\" to abort the merge)\n\nUnmerged paths:\n  (use \"git add <file>...\" to mark resolution)\n\tboth modified:   f.txt\n",
    },
    // git 2.47.3: git commit -m x during that merge
    Case {
        pattern: "git-conflict",
        from: "git commit (unmerged)",
        text: "error: Committing is not possible because you have unmerged files.\nhint: Fix them up in the work tree, and then use 'git add/rm <file>'\nhint: as appropriate to mark resolution and make a commit.\nfatal: Exiting because of an unresolved conflict.\nU\tf.txt\n",
    },
    // git 2.47.3: git pull during that merge
    Case {
        pattern: "git-conflict",
        from: "git pull (unmerged)",
        text: r#"error: Pulling is not possible because you have unmerged files.
hint: Fix them up in the work tree, and then use 'git add/rm <file>'
hint: as appropriate to mark resolution and make a commit.
fatal: Exiting because of an unresolved conflict.
"#,
    },
    // git 2.47.3: git rebase other (\r: git redraws its progress line)
    Case {
        pattern: "git-conflict",
        from: "git rebase other",
        text: "Rebasing (1/1)\rAuto-merging f.txt\nCONFLICT (content): Merge conflict in f.txt\nerror: could not apply a60f924... mine\nhint: Resolve all conflicts manually, mark them as resolved with\nhint: \"git add/rm <conflicted_files>\", then run \"git rebase --continue\".\n",
    },
    // git 2.47.3: git checkout other with f.txt modified
    Case {
        pattern: "git-conflict",
        from: "git checkout other (local changes)",
        text: "error: Your local changes to the following files would be overwritten by checkout:\n\tf.txt\nPlease commit your changes or stash them before you switch branches.\nAborting\n",
    },
    // git 2.47.3: git merge --no-edit FETCH_HEAD of an unrelated repository
    Case {
        pattern: "git-conflict",
        from: "git merge FETCH_HEAD (unrelated histories)",
        text: "fatal: refusing to merge unrelated histories\n",
    },
    // git 2.47.3: git push origin main, the remote ahead
    Case {
        pattern: "git-conflict",
        from: "git push origin main (remote ahead)",
        text: r#"To /tmp/ki/bare
 ! [rejected]        main -> main (fetch first)
error: failed to push some refs to '/tmp/ki/bare'
hint: Updates were rejected because the remote contains work that you do not
hint: have locally. This is usually caused by another repository pushing to
"#,
    },
    // git 2.47.3: git fetch; git push origin main
    Case {
        pattern: "git-conflict",
        from: "git push origin main (behind after fetch)",
        text: "To /tmp/ki/bare\n ! [rejected]        main -> main (non-fast-forward)\nerror: failed to push some refs to '/tmp/ki/bare'\n",
    },
    // git 2.47.3: git merge del (deleted on one side, changed on the other)
    Case {
        pattern: "git-conflict",
        from: "git merge del (modify/delete)",
        text: "CONFLICT (modify/delete): f.txt deleted in del and modified in HEAD.  Version HEAD of f.txt left in tree.\nAutomatic merge failed; fix conflicts and then commit the result.\n",
    },
    // git 2.47.3: git pull with diverged branches and no pull.rebase set (hint block cut)
    Case {
        pattern: "git-conflict",
        from: "git pull (divergent branches)",
        text: r#"hint: preference for all repositories. You can also pass --rebase, --no-rebase,
hint: or --ff-only on the command line to override the configured default per
hint: invocation.
fatal: Need to specify how to reconcile divergent branches.
"#,
    },
    // git 2.47.3: git pull --ff-only with diverged branches
    Case {
        pattern: "git-conflict",
        from: "git pull --ff-only (divergent branches)",
        text: "hint: Disable this message with \"git config advice.diverging false\"\nfatal: Not possible to fast-forward, aborting.\n",
    },
    // --------------------------------------------------------------------------------- crash
    // bash 5.2: bash runsegv.sh (a C program dereferencing NULL)
    Case {
        pattern: "crash",
        from: "bash runsegv.sh",
        text: "runsegv.sh: line 1: 14104 Segmentation fault      ./segv\nafter\n",
    },
    // bash 5.2 with ulimit -c unlimited: bash -c './segv; true'
    Case {
        pattern: "crash",
        from: "bash -c './segv; true' (core dumps on)",
        text: "bash: line 1: 14106 Segmentation fault      (core dumped) ./segv\n",
    },
    // bash 5.2: bash runab.sh (a C program calling abort())
    Case {
        pattern: "crash",
        from: "bash runab.sh (abort())",
        text: "runab.sh: line 1: 14157 Aborted                 ./ab\n",
    },
    // rustc 1.95.0: cargo run, indexing an empty Vec (backtrace cut)
    Case {
        pattern: "crash",
        from: "cargo run (index out of bounds)",
        text: r#"
thread 'main' (727) panicked at src/main.rs:1:54:
index out of bounds: the len is 0 but the index is 3
stack backtrace:
   0: __rustc::rust_begin_unwind
"#,
    },
    // rustc 1.95.0: cargo run, Err(..).unwrap() (backtrace cut)
    Case {
        pattern: "crash",
        from: "cargo run (unwrap on Err)",
        text: r#"
thread 'main' (763) panicked at src/main.rs:1:63:
called `Result::unwrap()` on an `Err` value: "boom"
note: Some details are omitted, run with `RUST_BACKTRACE=full` for a verbose backtrace.
"#,
    },
    // go 1.19: go run ./p (assignment to a nil map)
    Case {
        pattern: "crash",
        from: "go run ./p (nil map)",
        text: "panic: assignment to entry in nil map\n\ngoroutine 1 [running]:\nmain.main()\n\t/tmp/ki/gop/p/main.go:5 +0x2e\nexit status 2\n",
    },
    // go 1.19: go run ./p (receive on a channel nobody writes)
    Case {
        pattern: "crash",
        from: "go run ./p (deadlock)",
        text: "fatal error: all goroutines are asleep - deadlock!\n\ngoroutine 1 [chan receive]:\nmain.main()\n\t/tmp/ki/gop/p/main.go:5 +0x2c\nexit status 2\n",
    },
    // go 1.19: go run ./p (a map written and read from two goroutines)
    Case {
        pattern: "crash",
        from: "go run ./p (concurrent map access)",
        text: "fatal error: concurrent map read and map write\n\ngoroutine 1 [running]:\nmain.main()\n\t/tmp/ki/gop/p/main.go:8 +0x71\n",
    },
    // Python 3.11.7: python3 -X faulthandler -c 'import ctypes; ctypes.string_at(0)'
    Case {
        pattern: "crash",
        from: "python3 -X faulthandler (NULL read)",
        text: r#"Fatal Python error: Segmentation fault

Current thread 0x00007fe770288b80 (most recent call first):
  File "/root/.pyenv/versions/3.11.7/lib/python3.11/ctypes/__init__.py", line 519 in string_at
  File "<string>", line 1 in <module>
"#,
    },
    // ---------------------------------------------------------------------- python-traceback
    // Python 3.11.7: python3 -c 'import json; json.loads("{\"a\": 1,}")'
    Case {
        pattern: "python-traceback",
        from: "python3 json.loads('{\"a\": 1,}')",
        text: r#"Traceback (most recent call last):
  File "<string>", line 1, in <module>
  File "/root/.pyenv/versions/3.11.7/lib/python3.11/json/__init__.py", line 346, in loads
    return _default_decoder.decode(s)
           ^^^^^^^^^^^^^^^^^^^^^^^^^^
  File "/root/.pyenv/versions/3.11.7/lib/python3.11/json/decoder.py", line 337, in decode
    obj, end = self.raw_decode(s, idx=_w(s, 0).end())
               ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
  File "/root/.pyenv/versions/3.11.7/lib/python3.11/json/decoder.py", line 353, in raw_decode
    obj, end = self.scan_once(s, idx)
               ^^^^^^^^^^^^^^^^^^^^^^
json.decoder.JSONDecodeError: Expecting property name enclosed in double quotes: line 1 column 9 (char 8)
"#,
    },
    // Python 3.11.7: python3 -c 'x = bytearray(1<<62)'
    Case {
        pattern: "python-traceback",
        from: "python3 -c 'x = bytearray(1<<62)'",
        text: "Traceback (most recent call last):\n  File \"<string>\", line 1, in <module>\nMemoryError\n",
    },
];

const NEGATIVE: &[Case] = &[
    // ---------------------------------------------------------------- python-module-not-found
    Case {
        pattern: "python-module-not-found",
        from: "code that handles the error",
        text: "try:\n    import yaml\nexcept ModuleNotFoundError:\n    yaml = None\n",
    },
    Case {
        pattern: "python-module-not-found",
        from: "pip install",
        text: "Requirement already satisfied: requests in ./venv/lib/python3.11/site-packages (2.34.2)\nSuccessfully installed pyyaml-6.0.3\n",
    },
    // ------------------------------------------------------------------ node-module-not-found
    Case {
        pattern: "node-module-not-found",
        from: "code that handles the error",
        text: "} catch (e) { if (e.code === 'MODULE_NOT_FOUND') return null; throw e; }\n",
    },
    Case {
        pattern: "node-module-not-found",
        from: "npm install",
        text: "added 3 packages in 2s\n\nfound 0 vulnerabilities\n",
    },
    // ------------------------------------------------------------- rust-unresolved-dependency
    Case {
        pattern: "rust-unresolved-dependency",
        from: "cargo build with a warning",
        text: "   Compiling serde v1.0.229\nwarning: unused import: `std::fmt`\n --> src/lib.rs:1:5\n",
    },
    Case {
        pattern: "rust-unresolved-dependency",
        from: "cargo build (mismatched types, another error)",
        text: "error[E0308]: mismatched types\n --> src/main.rs:3:26\n",
    },
    // ---------------------------------------------------------------------- permission-denied
    Case {
        pattern: "permission-denied",
        from: "an agent's note",
        text: "Permission granted: the agent may edit files under src/\n",
    },
    Case {
        pattern: "permission-denied",
        from: "ls -l",
        text: "-rw-r--r-- 1 agent agent 1204 Nov 21 07:44 permissions.md\ndrwxr-x--- 2 agent agent 4096 Nov 21 07:44 EPERMANENT\n",
    },
    // ------------------------------------------------------------------------- file-not-found
    Case {
        pattern: "file-not-found",
        from: "code that handles the error",
        text: "    except FileNotFoundError:\n        return default\n",
    },
    Case {
        pattern: "file-not-found",
        from: "a search tool",
        text: "Found 3 files in src/ matching \"not found\"\nfile found: src/main.rs\n",
    },
    // ---------------------------------------------------------------------- command-not-found
    Case {
        pattern: "command-not-found",
        from: "pytest -v",
        text: "tests/test_cli.py::test_command_not_found_message PASSED                  [ 50%]\n",
    },
    Case {
        pattern: "command-not-found",
        from: "which",
        text: "/root/.cargo/bin/cargo\ncommand found: /usr/bin/git\n",
    },
    // --------------------------------------------------------------------------- build-failed
    // rustc 1.95.0: cargo build --release
    Case {
        pattern: "build-failed",
        from: "cargo build --release",
        text: "    Finished `release` profile [optimized] target(s) in 0.08s\n",
    },
    // gcc 12.2.0: gcc -Wall -c w.c (an unused variable); GNU make 4.3: make, twice
    Case {
        pattern: "build-failed",
        from: "gcc -Wall -c w.c; make",
        text: r#"w.c: In function ‘main’:
w.c:1:21: warning: unused variable ‘x’ [-Wunused-variable]
    1 | int main(void){ int x; return 0; }
      |                     ^
make: 'all' is up to date.
make: Nothing to be done for 'all'.
"#,
    },
    // Apache Maven 3.8.7: mvn -B -o test (all tests pass)
    Case {
        pattern: "build-failed",
        from: "mvn -B -o test (success)",
        text: "[INFO] BUILD SUCCESS\n[INFO] ------------------------------------------------------------------------\n",
    },
    Case {
        pattern: "build-failed",
        from: "gradle",
        text: "BUILD SUCCESSFUL in 3s\n7 actionable tasks: 7 executed\n",
    },
    // ---------------------------------------------------------------------- type-check-errors
    // pyright: npx pyright ok.py
    Case {
        pattern: "type-check-errors",
        from: "npx pyright ok.py",
        text: "0 errors, 0 warnings, 0 informations \n",
    },
    // mypy: mypy ok.py
    Case {
        pattern: "type-check-errors",
        from: "mypy ok.py",
        text: "Success: no issues found in 1 source file\n",
    },
    // TypeScript: npx tsc --watch --noEmit ok.ts
    Case {
        pattern: "type-check-errors",
        from: "npx tsc --watch --noEmit ok.ts",
        text: "\x1b[2J\x1b[3J\x1b[H07:49:01 AM - Starting compilation in watch mode...\n\n07:49:01 AM - Found 0 errors. Watching for file changes.\n",
    },
    // -------------------------------------------------------------------------- test-failures
    // cargo 1.95.0: cargo test (a should_panic test and a plain one, both pass)
    Case {
        pattern: "test-failures",
        from: "cargo test (passing)",
        text: r#"running 2 tests
test tests::ok ... ok
test tests::boom - should panic ... ok

test result: ok. 2 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.07s
"#,
    },
    Case {
        pattern: "test-failures",
        from: "cargo test summary",
        text: "test result: ok. 12 passed; 0 failed\n0 failed\n",
    },
    // pytest 9: pytest (passing)
    Case {
        pattern: "test-failures",
        from: "pytest (passing)",
        text: "============================== 1 passed in 0.01s ===============================\n",
    },
    // jest: npx jest fine.test.js
    Case {
        pattern: "test-failures",
        from: "npx jest fine.test.js",
        text: "Test Suites: 1 passed, 1 total\nTests:       1 passed, 1 total\nSnapshots:   0 total\nTime:        0.262 s\n",
    },
    // mocha: npx mocha ok.spec.js
    Case {
        pattern: "test-failures",
        from: "npx mocha ok.spec.js",
        text: "\n\n  calc\n    ✔ ok\n\n\n  1 passing (1ms)\n",
    },
    // go 1.19: go test -v . (passing)
    Case {
        pattern: "test-failures",
        from: "go test -v . (passing)",
        text: "=== RUN   TestOK\n--- PASS: TestOK (0.00s)\nPASS\nok  \texample.com/calc\t0.009s\n",
    },
    // Apache Maven 3.8.7, surefire 2.22.3: mvn -B -o test (passing)
    Case {
        pattern: "test-failures",
        from: "mvn -B -o test (passing)",
        text: "[INFO] Tests run: 2, Failures: 0, Errors: 0, Skipped: 0, Time elapsed: 0.041 s - in calc.CalcTest\n[INFO] Tests run: 2, Failures: 0, Errors: 0, Skipped: 0\n",
    },
    // -------------------------------------------------------------------------- out-of-memory
    Case {
        pattern: "out-of-memory",
        from: "a process listing",
        text: "Memory usage: 512 MiB of 2 GiB\noom_score_adj: 0\n",
    },
    Case {
        pattern: "out-of-memory",
        from: "code",
        text: "class MemoryErrorHandler:\n    def zoomkill(self): pass\n",
    },
    // ------------------------------------------------------------------------------ disk-full
    // coreutils: df -h /
    Case {
        pattern: "disk-full",
        from: "df -h /",
        text: "Filesystem      Size  Used Avail Use% Mounted on\n/dev/vda        252G   32G   60G  35% /\n",
    },
    Case {
        pattern: "disk-full",
        from: "a build tool",
        text: "Space left on device /dev/vda: 60G; quota: 100G\n",
    },
    // -------------------------------------------------------------------------- network-error
    // curl 7.88.1: curl -sv -o /dev/null http://127.0.0.1:5995/ (a local server up)
    Case {
        pattern: "network-error",
        from: "curl -sv (connected)",
        text: "*   Trying 127.0.0.1:5995...\n* Connected to 127.0.0.1 (127.0.0.1) port 5995 (#0)\n> GET / HTTP/1.1\n< HTTP/1.0 200 OK\n",
    },
    Case {
        pattern: "network-error",
        from: "a service log",
        text: "Connection established\nconnection pool: 4 idle, timeout 30s\n",
    },
    // ------------------------------------------------------------------------ container-error
    // Docker CLI 28.2.2: docker import; docker run --rm --network none bb echo hello
    Case {
        pattern: "container-error",
        from: "docker import; docker run (success)",
        text: "sha256:3dd4001d1d0e75f6086a3ce32f9529a5a8e638e0d4723b0d90ce9a81d1193a49\nhello\n",
    },
    Case {
        pattern: "container-error",
        from: "a deployment log",
        text: "Waiting for response from daemon...\nweb-7d4b9c6f5d-x2k8q   1/1     Running   0          2m14s\n",
    },
    // ----------------------------------------------------------------------- api-rate-limited
    Case {
        pattern: "api-rate-limited",
        from: "a service's start-up log",
        text: "rate limit: 100/min configured\nx-ratelimit-remaining: 4999\n",
    },
    Case {
        pattern: "api-rate-limited",
        from: "pytest -q",
        text: "429 passed in 12.31s\n",
    },
    // A full disk quota is not an API quota (it is disk-full)
    Case {
        pattern: "api-rate-limited",
        from: "python3 raising OSError(EDQUOT)",
        text: "OSError: [Errno 122] Disk quota exceeded: '/home/agent/x'\n",
    },
    // ------------------------------------------------------------------- claude-not-logged-in
    Case {
        pattern: "claude-not-logged-in",
        from: "gh auth status (not logged in to GitHub)",
        text: "You are not logged into any GitHub hosts. To log in, run: gh auth login\n",
    },
    Case {
        pattern: "claude-not-logged-in",
        from: "luzia's rendering of a run that succeeded, and of one the API limited",
        text: "── success · 1 turn · 2.1s · 1,200 in / 40 out / 300 cache read / 0 cache write tokens · $0.0071\n── failed (API error 429): API Error: Request rejected (429) · 1 turn\n",
    },
    Case {
        pattern: "claude-not-logged-in",
        from: "a web application's routes",
        text: "router.post('/login', authenticate); // run /login tests with npm test\n",
    },
    // ------------------------------------------------------------------ claude-credit-balance
    Case {
        pattern: "claude-credit-balance",
        from: "an agent writing about billing code",
        text: "Added a check that the customer's credit balance is positive before charging\n",
    },
    // --------------------------------------------------------------------- claude-usage-limit
    Case {
        pattern: "claude-usage-limit",
        from: "Claude Code 2.1.197 warning before the limit (template)",
        text: "You're close to your session limit · resets 5pm (UTC)\n",
    },
    Case {
        pattern: "claude-usage-limit",
        from: "an agent's own text",
        text: "The request limit for the endpoint is 100 per minute; we hit it rarely.\n",
    },
    // ------------------------------------------------------------------ claude-bypass-as-root
    Case {
        pattern: "claude-bypass-as-root",
        from: "a command line that uses the flag",
        text: "$ claude -p --dangerously-skip-permissions \"fix the tests\"\n",
    },
    // ------------------------------------------------------------------- claude-not-installed
    Case {
        pattern: "claude-not-installed",
        from: "luzia's supervisor, another agent missing",
        text: "luzia: cannot start the agent \"aider\": No such file or directory (os error 2)\n",
    },
    Case {
        pattern: "claude-not-installed",
        from: "luzia's supervisor, claude there but not executable",
        text: "luzia: cannot start the agent \"claude\": Permission denied (os error 13)\n",
    },
    // ------------------------------------------------------------------- claude-not-reachable
    Case {
        pattern: "claude-not-reachable",
        from: "an agent's own command refused a file",
        text: "cat: /etc/shadow: Permission denied\n",
    },
    // -------------------------------------------------------------- luzia-mcp-not-reachable
    Case {
        pattern: "luzia-mcp-not-reachable",
        from: "another MCP server's tool missing",
        text: "Error: MCP tool mcp__github__create_issue not found\n",
    },
    // ------------------------------------------------------------------ authentication-failed
    Case {
        pattern: "authentication-failed",
        from: "gh auth status",
        text: "  ✓ Logged in to github.com account agent (keyring)\nAuthentication succeeded\n",
    },
    Case {
        pattern: "authentication-failed",
        from: "curl -i",
        text: "HTTP/1.1 200 OK\nx-api-key: set\n",
    },
    // ---------------------------------------------------------------------- corrupted-config
    Case {
        pattern: "corrupted-config",
        from: "an application's start-up log",
        text: "Loaded config from /etc/luzia/config.toml\nParsed 3 YAML documents; JSON schema valid\n",
    },
    Case {
        pattern: "corrupted-config",
        from: "rustc (a .rs location)",
        text: " --> src/config.rs:3:17\n",
    },
    // -------------------------------------------------------------------------- git-conflict
    // git 2.47.3: git merge --no-edit f2; git merge f2; git rebase main (all clean)
    Case {
        pattern: "git-conflict",
        from: "git merge; git rebase (clean)",
        text: "Updating ac48521..926fb6b\nFast-forward\n other.txt | 1 +\n 1 file changed, 1 insertion(+)\n create mode 100644 other.txt\nAlready up to date.\nRebasing (1/1)\rSuccessfully rebased and updated refs/heads/f3.\n",
    },
    Case {
        pattern: "git-conflict",
        from: "git merge (auto-merged)",
        text: "Auto-merging f.txt\nMerge made by the 'ort' strategy.\n f.txt | 1 +\n",
    },
    // --------------------------------------------------------------------------------- crash
    Case {
        pattern: "crash",
        from: "cargo test (should_panic passes)",
        text: "test tests::boom - should panic ... ok\nthread 'main' started\n",
    },
    Case {
        pattern: "crash",
        from: "ulimit; a note",
        text: "core dumps disabled (ulimit -c 0)\nno panic: all workers exited cleanly\n",
    },
    // ---------------------------------------------------------------------- python-traceback
    Case {
        pattern: "python-traceback",
        from: "code",
        text: "    traceback.print_exc()\n    log(\"Traceback (most recent call last):\")\n",
    },
    Case {
        pattern: "python-traceback",
        from: "pytest --tb=short",
        text: "Traceback:\n  --tb=short shows the most recent call last\n",
    },
];

/// The names of the patterns `text` matches, as `scan_text` reports them.
fn found(set: &PatternSet, text: &str) -> Vec<String> {
    scan_text(set, text.as_bytes())
        .found
        .iter()
        .map(|f| set.pattern(f.pattern).name.clone())
        .collect()
}

fn describe(i: usize, case: &Case, got: &[String]) -> String {
    format!(
        "case {i}: {} ({})\n  found: {got:?}\n  text:\n{}",
        case.pattern,
        case.from,
        case.text
            .lines()
            .map(|l| format!("    | {l}"))
            .collect::<Vec<_>>()
            .join("\n")
    )
}

#[test]
fn every_positive_case_is_found() {
    let set = PatternSet::builtin();
    let failures: Vec<String> = positive()
        .enumerate()
        .filter_map(|(i, case)| {
            let got = found(&set, case.text);
            (!got.iter().any(|n| n == case.pattern)).then(|| describe(i, case, &got))
        })
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} real outputs not recognised:\n\n{}",
        failures.len(),
        positive().count(),
        failures.join("\n\n")
    );
}

#[test]
fn no_negative_case_is_found() {
    let set = PatternSet::builtin();
    let failures: Vec<String> = negative()
        .enumerate()
        .filter_map(|(i, case)| {
            let got = found(&set, case.text);
            got.iter()
                .any(|n| n == case.pattern)
                .then(|| describe(i, case, &got))
        })
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} benign outputs taken for a problem:\n\n{}",
        failures.len(),
        negative().count(),
        failures.join("\n\n")
    );
}

#[test]
fn every_builtin_pattern_has_positive_and_negative_cases() {
    let set = PatternSet::builtin();
    let mut missing = Vec::new();
    for p in set.patterns() {
        if !positive().any(|c| c.pattern == p.name) {
            missing.push(format!("{}: no positive case", p.name));
        }
        if !negative().any(|c| c.pattern == p.name) {
            missing.push(format!("{}: no negative case", p.name));
        }
    }
    assert!(missing.is_empty(), "{missing:#?}");
}

#[test]
fn every_case_names_a_builtin_pattern() {
    let set = PatternSet::builtin();
    for case in positive().chain(negative()) {
        assert!(
            set.patterns().iter().any(|p| p.name == case.pattern),
            "no built-in pattern is named {:?} ({})",
            case.pattern,
            case.from
        );
    }
}

/// All the real outputs one after the other in a log, read the way the cockpit reads it: every
/// pattern is found, and each as often as its cases say.
#[test]
fn the_incremental_scanner_finds_every_pattern_in_one_log() {
    let set = PatternSet::builtin();
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("output.log");
    let mut file = std::fs::File::create(&log).unwrap();
    for case in positive() {
        file.write_all(case.text.as_bytes()).unwrap();
        if !case.text.ends_with('\n') {
            file.write_all(b"\n").unwrap();
        }
    }
    drop(file);
    let mut scanner = IssueScanner::new();
    assert!(scanner.advance(&log, &set, u64::MAX).unwrap());
    let whole = scan_text(&set, &std::fs::read(&log).unwrap());
    assert_eq!(scanner.findings.found.len(), whole.found.len());
    for p in set.patterns() {
        let by_scanner = scanner
            .findings
            .found
            .iter()
            .find(|f| set.pattern(f.pattern).name == p.name);
        let by_text = whole
            .found
            .iter()
            .find(|f| set.pattern(f.pattern).name == p.name);
        assert!(by_scanner.is_some(), "{} not found in the log", p.name);
        assert_eq!(
            by_scanner.map(|f| f.count),
            by_text.map(|f| f.count),
            "{}",
            p.name
        );
    }
}

/// The real stream of a run that cannot log in, of the oldest and the newest Claude Code
/// supported, rendered as the supervisor renders it into output.log: the issue shown first is
/// `claude-not-logged-in`, whose fix says what to set.
#[test]
fn a_claude_code_run_that_cannot_log_in_is_the_not_logged_in_issue() {
    use luzia::jobs::run::stream::render::Renderer;
    let set = PatternSet::builtin();
    let captures = [
        include_str!("golden/claude/not-logged-in-2.1.197.jsonl"),
        include_str!("golden/claude/not-logged-in-2.1.332.jsonl"),
        include_str!("golden/claude/key-refused-2.1.197.jsonl"),
        include_str!("golden/claude/key-refused-2.1.332.jsonl"),
    ];
    for stream in captures {
        let mut r = Renderer::new();
        let log: String = stream.lines().map(|l| r.line(l.as_bytes()).text).collect();
        let findings = scan_text(&set, log.as_bytes());
        let worst = findings.worst().map(|f| set.pattern(f.pattern));
        assert_eq!(
            worst.map(|p| p.name.as_str()),
            Some("claude-not-logged-in"),
            "{log}"
        );
        let fix = worst.map(|p| p.fix.as_str()).unwrap_or_default();
        assert!(
            fix.contains("ANTHROPIC_API_KEY") && fix.contains("luzia doctor"),
            "{fix}"
        );
    }
}

/// The output.log of each ACP agent's job that could not log in, as `luzia run --agent NAME`
/// left it from a fresh HOME: the issue shown first is that agent's, and its fix names what to
/// set.
#[test]
fn an_acp_agent_that_cannot_log_in_is_its_own_not_logged_in_issue() {
    let set = PatternSet::builtin();
    for (what, log, issue, names) in agents::LOGS {
        let findings = scan_text(&set, log.as_bytes());
        let worst = findings.worst().map(|f| set.pattern(f.pattern));
        assert_eq!(
            worst.map(|p| p.name.as_str()),
            Some(*issue),
            "{what}:\n{log}"
        );
        let fix = worst.map(|p| p.fix.as_str()).unwrap_or_default();
        for name in *names {
            assert!(fix.contains(name), "{what}: {name} not in the fix: {fix}");
        }
        assert!(fix.contains("luzia doctor"), "{what}: {fix}");
    }
}

/// Every line of each captured agent log that matches an agent's issue matches exactly the
/// issue the log is, and no other agent's issue nor another of the same agent's: a refused key
/// is never taken for a missing login, nor Gemini's refusal for Qwen's.
#[test]
fn each_line_of_an_agent_log_is_only_its_own_issue() {
    let set = PatternSet::builtin();
    let of_an_agent = |name: &str| {
        agents::AGENTS
            .iter()
            .any(|a| name.starts_with(&format!("{a}-")))
    };
    for (what, log, issue, _) in agents::LOGS {
        let mut matched = 0;
        for line in log.lines() {
            let agents: Vec<String> = found(&set, line)
                .into_iter()
                .filter(|n| of_an_agent(n))
                .collect();
            if agents.is_empty() {
                continue;
            }
            assert_eq!(agents, [*issue], "{what}: the line {line:?}");
            matched += 1;
        }
        assert!(matched > 0, "{what}: no line is {issue}");
    }
}
