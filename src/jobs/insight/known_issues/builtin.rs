//! The built-in database: problems agents run into every day, each with the words the tool
//! that reports it really prints, and what an operator should do. Regexes are matched per line,
//! bytewise, with escape sequences already stripped; `(?i)` where tools disagree on case.

use super::{Origin, Pattern, Severity};

struct Def {
    name: &'static str,
    severity: Severity,
    description: &'static str,
    regexes: &'static [&'static str],
    fix: &'static str,
}

const DEFS: &[Def] = &[
    Def {
        name: "python-module-not-found",
        severity: Severity::Error,
        description: "A Python import failed: the module is not installed where the agent runs",
        regexes: &[
            r"ModuleNotFoundError: No module named ",
            r"ImportError: No module named ",
            r"ImportError: cannot import name ",
        ],
        fix: "Install it in the environment the agent uses (pip install <module>, or add it to \
              requirements.txt / pyproject.toml and reinstall); check that the project's \
              virtualenv is the one on PATH.",
    },
    Def {
        name: "node-module-not-found",
        severity: Severity::Error,
        description: "A Node.js require or import could not be resolved",
        regexes: &[
            r"Error: Cannot find module '",
            r"\[?ERR_MODULE_NOT_FOUND\]?",
            r"Module not found: Error: Can't resolve ",
            r"Cannot find package '[^']+' imported from ",
            // esbuild (and Vite, which bundles with it)
            r#"\[ERROR\] Could not resolve ""#,
            r"error TS2307: Cannot find module '",
        ],
        fix: "Run npm install (or pnpm install / yarn) in the project; if the package is new, \
              add it with npm install <package> so package.json records it.",
    },
    Def {
        name: "rust-unresolved-dependency",
        severity: Severity::Error,
        description: "A Rust crate or path could not be found",
        regexes: &[
            r"error\[E0432\]: unresolved import",
            // rustc 1.95 says "cannot find module or crate"; older ones "failed to resolve".
            r"error\[E0433\]: (?:failed to resolve: use of (?:undeclared|unresolved) (?:crate|module)|cannot find module or crate )",
            r"error\[E0463\]: can't find crate for ",
            r"error: no matching package named ",
        ],
        fix: "Add the crate to Cargo.toml (cargo add <crate>) or correct the `use` path; for a \
              crate that exists, check the feature that exposes the item is enabled.",
    },
    Def {
        name: "permission-denied",
        severity: Severity::Error,
        description: "The operating system refused access to a file or operation",
        regexes: &[
            r"(?i)permission denied",
            r"\bEACCES\b",
            r"\bEPERM\b",
            r"Operation not permitted",
        ],
        fix: "Check the owner and mode of the path it names (ls -l); agents of a project run as \
              the project's user, so give that user access rather than running as root.",
    },
    Def {
        name: "file-not-found",
        severity: Severity::Warning,
        description: "A file or directory the agent expected does not exist",
        regexes: &[
            r"No such file or directory",
            r"FileNotFoundError: ",
            r"\bENOENT\b",
            r"(?i)\bfile not found\b",
            // pytest, given a test path that does not exist
            r"file or directory not found: ",
        ],
        fix: "Check the path it names: a wrong working directory (the project path in config) \
              or a file not generated yet are the usual causes.",
    },
    Def {
        name: "command-not-found",
        severity: Severity::Error,
        description: "A program the agent tried to run is not installed or not on PATH",
        regexes: &[
            r": command not found",
            // dash names itself or the script: `sh: 1: x: not found`, `build.sh: 2: x: not found`
            r"^\S+: \d+: [^:]+: not found$",
            r"is not recognized as an internal or external command",
            // coreutils env, as a command or in a #! line; the quotes are ‘’ in UTF-8 locales
            r"^(?:/usr/bin/)?env: \S+: No such file or directory",
            // a make recipe's program
            r"^make(?:\[\d+\])?: [^ :*]+: No such file or directory$",
            // Node's child_process
            r"\bspawn \S+ ENOENT\b",
        ],
        fix: "Install the program on the server, or add its directory to PATH for the user the \
              agent runs as (agents do not read your interactive shell's profile).",
    },
    Def {
        name: "build-failed",
        severity: Severity::Error,
        description: "Compiling or building the project failed",
        regexes: &[
            r"error: could not compile `",
            r"make(?:\[\d+\])?: \*\*\* (?:.*Error \d+|No rule to make target)",
            r"compilation terminated\.",
            r"^\S+\.(?:c|cc|cpp|cxx|h|hpp|go|java|kt|swift|m):\d+(?::\d+)?: (?:fatal )?error: ",
            // the Go compiler, which does not say "error"
            r"^\S+\.go:\d+:\d+: (?:undefined: |syntax error: |cannot use |invalid operation: |missing return|declared and not used|imported and not used|too many |not enough )",
            r"^FAIL\s+\S+ \[build failed\]",
            r"\bBUILD FAILED\b",
            // Maven says it at INFO level
            r"\[(?:INFO|ERROR)\] BUILD FAILURE",
            r"\[ERROR\] COMPILATION ERROR",
            r"error: linking with `[^`]+` failed",
            r"(?:collect2|clang(?:\+\+)?): error: (?:ld returned \d+ exit status|linker command failed)",
            r"^SyntaxError: ",
        ],
        fix: "Read the first error above this line in the output pane ([ jumps to it); it is \
              usually the cause, and the rest follow from it.",
    },
    Def {
        name: "type-check-errors",
        severity: Severity::Error,
        description: "The type checker reported errors",
        regexes: &[
            r"error TS\d{4}: ",
            r"^Found \d+ errors? in \d+ files? \(checked \d+ source files?\)",
            r"^\S+\.pyi?:\d+(?::\d+)?: error: .*\[[a-z-]+\]$",
            // pyright's summary, which it prints with "0 errors" too
            r"^\s*[1-9]\d* errors?, \d+ warnings?, \d+ (?:informations?|notes?)",
            r"error\[E0308\]: mismatched types",
        ],
        fix: "Run the type checker yourself in the project (tsc --noEmit, mypy, pyright, cargo \
              check) to see the full list, then ask the agent to fix them one file at a time.",
    },
    Def {
        name: "test-failures",
        severity: Severity::Error,
        description: "Tests failed",
        regexes: &[
            r"^FAILED \S+::\S+",
            r"^=+ .*\b[1-9]\d* failed\b.* =+$",
            // pytest -q: the same summary without its frame
            r"^[1-9]\d* failed(?:, \d+ [a-z]+)* in [\d.]+s",
            r"^!+ Interrupted: \d+ errors? during collection !+$",
            r"test result: FAILED\.",
            r"^Tests:\s+[1-9]\d* failed",
            r"^Test Suites:\s+[1-9]\d* failed",
            r"^\s+[1-9]\d* failing$",
            r"^--- FAIL: \S+",
            r"^FAIL\s+\S+\s+[\d.]+s$",
            // Surefire, with Maven 3's [ERROR] in front
            r"^(?:\[ERROR\] )?Tests run: \d+, Failures: (?:[1-9]|\d+, Errors: [1-9])",
            r"There are test failures\.",
        ],
        fix: "Re-run the failing test alone to see whether the agent's change broke it or it was \
              failing before (git stash, then run it on the base commit).",
    },
    Def {
        name: "out-of-memory",
        severity: Severity::Critical,
        description: "A process ran out of memory, or the kernel killed it for memory",
        regexes: &[
            // "Out of memory: ..." system-wide, "Memory cgroup out of memory: ..." in a cgroup
            r"[Oo]ut of memory: Killed process \d+",
            r"\bMemoryError\b",
            r"Cannot allocate memory",
            r"JavaScript heap out of memory",
            r"std::bad_alloc",
            r"memory allocation of \d+ bytes failed",
            r"(?i)\boom[- ]?kill",
            r"^(?:\S+: )?line \d+: +\d+ Killed ",
            // Go
            r"^fatal error: (?:runtime: )?out of memory",
        ],
        fix: "Check memory on the server (free -h, dmesg | grep -i oom); lower [agent] \
              max_concurrent so fewer agents build at once, or give the build less parallelism.",
    },
    Def {
        name: "disk-full",
        severity: Severity::Critical,
        description: "A file system is full (or a quota is reached)",
        regexes: &[
            r"No space left on device",
            r"\bENOSPC\b",
            r"Disk quota exceeded",
            r"\bEDQUOT\b",
        ],
        fix: "Free space now (df -h; clear build caches like target/ and node_modules/.cache, \
              old job logs); every agent writing to that disk will fail until you do.",
    },
    Def {
        name: "network-error",
        severity: Severity::Error,
        description: "A connection was refused, timed out, or a host name did not resolve",
        regexes: &[
            // Go's dialer says it in lower case
            r"[Cc]onnection refused",
            r"\bE(?:CONNREFUSED|CONNRESET|TIMEDOUT|NETUNREACH|HOSTUNREACH)\b",
            r"(?i)connection timed out",
            r"(?i)read timed out",
            r"Temporary failure in name resolution",
            r"Name or service not known",
            r"getaddrinfo (?:ENOTFOUND|EAI_AGAIN)",
            r"Could not resolve host",
            r"Network is unreachable",
            // curl and git over HTTP
            r"Failed to connect to \S+ port \d+",
            r"Operation timed out after \d+ milliseconds",
            // Python's socket timeout
            r"TimeoutError: timed out",
            // Go's resolver
            r"lookup \S+.*: no such host",
        ],
        fix: "Check the service or host it names is up and reachable from this server (curl -v, \
              getent hosts <name>); a proxy or firewall change is a common cause.",
    },
    Def {
        name: "container-error",
        severity: Severity::Error,
        description: "Docker or the container runtime failed",
        regexes: &[
            r"Cannot connect to the Docker daemon",
            r"Error response from daemon: ",
            r"OCI runtime (?:create|exec) failed",
            r"\b(?:ImagePullBackOff|ErrImagePull|CrashLoopBackOff)\b",
            r"pull access denied for ",
            r"permission denied while trying to connect to the Docker daemon socket",
        ],
        fix: "Check the Docker daemon is running (systemctl status docker) and that the agent's \
              user is in the docker group; for pulls, check the image name and registry login.",
    },
    Def {
        name: "api-rate-limited",
        severity: Severity::Error,
        description: "The agent's model API refused work: rate limit, quota or overload",
        regexes: &[
            r"(?i)rate[ _-]?limit(?:ed|_error| exceeded| reached)",
            r"would exceed the rate limit",
            r"(?i)too many requests",
            r"overloaded_error",
            r"(?i)\bAPI (?:is )?overloaded\b",
            // Claude Code 2.x: "API Error: Request rejected (429) · ...", "API Error: 529 Overloaded."
            r"API Error: (?:Request rejected \()?(?:429|529)\b",
            r"(?i)usage limit reached",
            r"\binsufficient_quota\b",
            r"You exceeded your current quota",
            // not "Disk quota exceeded", which is disk-full
            r"Quota exceeded for quota metric",
        ],
        fix: "Wait for the limit to reset, then retry (r); if it keeps happening, lower [agent] \
              max_concurrent so fewer agents call the API at once.",
    },
    Def {
        name: "authentication-failed",
        severity: Severity::Critical,
        description: "Credentials were refused: API key, login, SSH key or token",
        regexes: &[
            r"authentication_error",
            r"(?i)invalid (?:x-)?api[ _-]?key",
            r"(?i)authentication failed",
            r"Permission denied \(publickey",
            r"(?i)(?:oauth )?token (?:has )?expired",
            r"\b401:? Unauthorized\b",
            // curl -f
            r"returned error: 401\b",
            // git over HTTP with no credentials to give
            r"could not read (?:Username|Password) for '",
        ],
        fix: "Renew the credential the message names (API key in the agent's environment, \
              claude /login, gh auth login, ssh-add); every agent using it will fail until then.",
    },
    // Claude Code's own failures. Its API errors 429 and 529 are `api-rate-limited` above; these
    // are the ones only Claude Code reports, in the words it prints (as text, on stderr, and as
    // luzia renders its stream-json).
    Def {
        name: "claude-not-logged-in",
        severity: Severity::Critical,
        description: "Claude Code could not log in: no credential reached it, or the API refused \
                      its key (401)",
        regexes: &[
            // 2.x with no credential: "Not logged in · Please run /login"; 1.x: "Invalid API
            // key · Please run /login"
            r"(?i)please run /login",
            // 2.x with a key the API refused: "Invalid API key · Fix external API key"
            r"Fix external API key",
            // its stream-json's error, and luzia's rendering of a retry after a 401
            r"\bauthentication_failed\b",
            // luzia's rendering of the result
            r"^── failed \(API error 401\)",
        ],
        fix: "Give Claude Code a credential in the environment luzia (and so the agent) runs \
              in: export ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN, CLAUDE_CODE_OAUTH_TOKEN, or \
              CLAUDE_CODE_USE_BEDROCK / _VERTEX / _FOUNDRY with that cloud's credentials) before \
              starting luzia, or log in once with `claude /login` as the user agents run as; a \
              refused key must be replaced. `luzia doctor` says which are set. Retry (r) \
              afterwards.",
    },
    Def {
        name: "claude-credit-balance",
        severity: Severity::Critical,
        description: "The Anthropic account behind the agent's API key has no credit left",
        regexes: &[r"(?i)credit balance (?:is )?too low"],
        fix: "Add credits to the account in the Anthropic Console (Plans & Billing), or give the \
              project a key with credit (ANTHROPIC_API_KEY in its env in the config); every \
              agent using this key fails until then. Retry (r) afterwards.",
    },
    Def {
        name: "claude-usage-limit",
        severity: Severity::Error,
        description: "The Claude subscription's usage limit is reached (the line says when it \
                      resets)",
        regexes: &[
            // 2.x: "You've hit your session limit · resets 5pm (UTC)", "... weekly limit ...",
            // "... Opus limit ...", "... org's monthly usage limit ...", 2.1.3xx's
            // "... 5-hour limit ..."
            r"You've (?:hit|reached) your (?:[A-Za-z0-9'-]+ ){0,4}limit\b",
            // 1.x, and as luzia renders it with the reset time in words
            r"Claude AI usage limit reached",
        ],
        fix: "Wait until the time the line gives and retry (r); to go on now, give the project \
              an API key (ANTHROPIC_API_KEY in its env in the config), which is billed per use \
              instead of the subscription.",
    },
    Def {
        name: "claude-bypass-as-root",
        severity: Severity::Critical,
        description: "Claude Code refused --dangerously-skip-permissions because it runs as root",
        regexes: &[r"--dangerously-skip-permissions cannot be used with root/sudo privileges"],
        fix: "Run the project's agents as an ordinary user ([projects.NAME] user = \"...\" in \
              the config), or use a permission mode instead of bypassing permissions; only on a \
              disposable sandbox set IS_SANDBOX=1 in the agent's env.",
    },
    Def {
        name: "claude-not-installed",
        severity: Severity::Critical,
        description: "The `claude` command could not be started: Claude Code is not installed, or \
                      not on the agent's PATH",
        regexes: &[
            r#"^luzia: cannot start the agent "(?:[^"]*/)?claude": No such file or directory"#,
        ],
        fix: "Install Claude Code on this server (npm install -g @anthropic-ai/claude-code) as \
              the user agents run as, or name its full path in [agent] command in the config \
              (`which claude` shows it): agents see the PATH luzia was started with, not your \
              login shell's.",
    },
    Def {
        name: "claude-not-reachable",
        severity: Severity::Critical,
        description: "The project's user may not run `claude`: a directory on its path is closed \
                      to that user",
        regexes: &[r#"^luzia: cannot start the agent "(?:[^"]*/)?claude": Permission denied"#],
        fix: "Install Claude Code where the project's user can run it (e.g. npm install -g \
              @anthropic-ai/claude-code into /usr/local, not under /root), or open the \
              directories on its path to that user; [agent] command can name the full path.",
    },
    Def {
        name: "luzia-mcp-not-reachable",
        severity: Severity::Critical,
        description: "Claude Code could not start luzia's MCP server, so its permission requests \
                      had nowhere to go: the luzia binary is not one the agent's user can run",
        regexes: &[
            r"MCP tool mcp__luzia__permission \(passed via --permission-prompt-tool\) not found",
        ],
        fix: "Install luzia where every project user can run it (cargo install --path . --root \
              /usr/local, not into /root/.cargo) and start it from there: each job's mcp.json \
              names the luzia that dispatched it.",
    },
    Def {
        name: "corrupted-config",
        severity: Severity::Error,
        description: "A JSON, YAML or TOML file could not be parsed",
        regexes: &[
            r"json\.decoder\.JSONDecodeError",
            r"JSONDecodeError: Expecting ",
            r"SyntaxError: Unexpected (?:token .* in JSON|end of JSON input)",
            r"SyntaxError: .* is not valid JSON",
            // V8 11 and later (Node 20): "Expected double-quoted property name in JSON at position 8"
            r"\b(?:in|after) JSON at position \d+",
            r"\bEJSONPARSE\b",
            r"yaml\.(?:scanner\.ScannerError|parser\.ParserError)",
            r"YAMLException: ",
            r"TOML parse error at line \d+",
            r"(?:TOML|Toml)DecodeError: ",
            // cargo pointing into a manifest it cannot parse
            r"^\s*--> \S+\.toml:\d+:\d+",
            r"(?i)error parsing (?:config|configuration|settings)",
            r"(?i)(?:malformed|invalid|corrupt(?:ed)?) (?:json|yaml|toml|config(?:uration)? file)",
        ],
        fix: "Open the file it names at the line it gives; an interrupted write or a merge \
              conflict marker are the usual causes (git diff shows what changed).",
    },
    Def {
        name: "git-conflict",
        severity: Severity::Error,
        description: "Git could not merge, rebase, pull or push cleanly",
        regexes: &[
            r"CONFLICT \([a-z/ ]+\): ",
            r"Automatic merge failed; fix conflicts",
            r"error: Your local changes to the following files would be overwritten",
            r"You have unmerged paths",
            r"is not possible because you have unmerged files",
            r"fatal: Exiting because of an unresolved conflict",
            r"fatal: refusing to merge unrelated histories",
            r"fatal: Need to specify how to reconcile divergent branches",
            r"fatal: Not possible to fast-forward",
            r"! \[rejected\] .*\((?:non-fast-forward|fetch first)\)",
            r"error: failed to push some refs",
        ],
        fix: "Look at the working tree yourself (git status in the project); resolve or abort \
              (git merge --abort / git rebase --abort) before retrying the agent.",
    },
    Def {
        name: "crash",
        severity: Severity::Critical,
        description: "A process crashed: segmentation fault, abort, a Rust or Go panic",
        regexes: &[
            r"Segmentation fault",
            r"\bSIGSEGV\b",
            r"\(core dumped\)",
            // newer Rust names the thread's id too: "thread 'main' (727) panicked at"
            r"thread '[^']*'(?: \(\d+\))? panicked at ",
            r"^panic: ",
            r"^fatal error: (?:runtime|all goroutines|concurrent map)",
            r"^Fatal Python error: ",
            r"^(?:\S+: )?line \d+: +\d+ (?:Aborted|Bus error|Illegal instruction)",
        ],
        fix: "Find the first crash line in the output; a crash in a tool (not in the project's \
              code) usually needs the tool reinstalled or upgraded.",
    },
    Def {
        name: "python-traceback",
        severity: Severity::Warning,
        description: "A Python exception was raised (see the lines after it)",
        regexes: &[r"^Traceback \(most recent call last\):"],
        fix: "The last line of the traceback names the exception; if the agent did not handle \
              it, the job probably failed on it.",
    },
];

pub fn patterns() -> Vec<Pattern> {
    DEFS.iter()
        .map(|d| Pattern {
            name: d.name.into(),
            description: d.description.into(),
            severity: d.severity,
            regexes: d.regexes.iter().map(|r| (*r).to_string()).collect(),
            fix: d.fix.into(),
            ignore_case: false,
            origin: Origin::Builtin,
        })
        // Each agent's own failures, in a file of their own.
        .chain(super::agents::patterns())
        .collect()
}
