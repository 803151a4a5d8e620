"""promptfoo compatibility (issue 9): read a promptfoo config, score as promptfoo scores.

Pure code, no network and no subprocess (the runner calls agents, and Node.js for JavaScript:
:mod:`coalmine.promptfoo.node`). What is here, each checked against promptfoo 0.121.20's own
output:

- reading a config into a test matrix (:mod:`~coalmine.promptfoo.config` and the modules it
  uses: prompts, providers, tests files and CSV, vars expansion, ``defaultTest``, scenarios);
- rendering templates as Nunjucks does (:mod:`~coalmine.promptfoo.nunjucks`);
- promptfoo's scoring rules for a row (:mod:`~coalmine.promptfoo.scoring`);
- which coalmine grader grades each assertion type (:mod:`~coalmine.promptfoo.assertions`);
- which coalmine agent stands for each provider (:mod:`~coalmine.promptfoo.providers`);
- promptfoo's output document, built from coalmine's rows (:mod:`~coalmine.promptfoo.report`);
- what a row's evaluation reads, shared by the direct run and the import
  (:mod:`~coalmine.promptfoo.prepared`), and promptfoo's ``gradingResult``
  (:mod:`~coalmine.promptfoo.grading`);
- a config as coalmine suites and agents (:mod:`~coalmine.promptfoo.importer`), and a suite as
  a config (:mod:`~coalmine.promptfoo.exporter`).

How imported suites run: ``coalmine import promptfoo`` writes one suite per column (a prompt
run by a provider) under ``harness/evals/``, whose ``<suite>.yaml`` says ``compat: promptfoo``
(:mod:`coalmine.specs.compat`) and whose lines keep each test's promptfoo fields. The eval
engine hands such a line to :mod:`coalmine.promptfoo.suite`, which evaluates it with the
same :func:`coalmine.promptfoo.row.evaluate_row` as ``eval run --promptfoo`` and stores
promptfoo's verdict as an attempt; so the store, resume, comparisons and the judge policy work
as for any suite, and ``--format promptfoo`` rebuilds promptfoo's document from the stored rows
(:mod:`coalmine.promptfoo.stored`).
"""
