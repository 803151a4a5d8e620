"""promptfoo compatibility (issue 9): run, import and export promptfoo configs with its verdicts.

May import the engine and everything below it, and :mod:`coalmine.evals` (a declared edge:
imported suites run on the eval-suite engine as a compat kind).

The pure part (no network, no subprocess: a contract checks it), each checked against promptfoo
0.121.20's own output:

- reading a config into a test matrix (the subpackage :mod:`~coalmine.promptfoo.matrix`: the
  config file, prompts, providers, tests files and CSV, vars expansion, ``defaultTest``,
  scenarios, filters);
- rendering templates as Nunjucks does (the subpackage :mod:`~coalmine.promptfoo.nunjucks`,
  with JavaScript's values and JSON);
- promptfoo's scoring rules for a row (:mod:`~coalmine.promptfoo.scoring`), and what a
  script's GradingResult does to it (:mod:`~coalmine.promptfoo.script_results`);
- which coalmine grader grades each assertion type (:mod:`~coalmine.promptfoo.assertions`);
- which coalmine agent stands for each provider (:mod:`~coalmine.promptfoo.providers`);
- promptfoo's output document, built from coalmine's rows (:mod:`~coalmine.promptfoo.report`);
- what a row's evaluation reads, shared by the direct run and the import
  (:mod:`~coalmine.promptfoo.matrix.prepared`), and promptfoo's ``gradingResult``
  (:mod:`~coalmine.promptfoo.grading`);
- a config as coalmine suites and agents (:mod:`~coalmine.promptfoo.importer`), and a suite as
  a config (:mod:`~coalmine.promptfoo.exporter`).

The orchestration: a config run end to end (:mod:`~coalmine.promptfoo.run`), one row
(:mod:`~coalmine.promptfoo.row`) and its assertions (:mod:`~coalmine.promptfoo.checking`), the
author's JavaScript in Node.js (:mod:`~coalmine.promptfoo.node`) and Python
(:mod:`~coalmine.promptfoo.python_calls`), transforms and scoring functions in either
(:mod:`~coalmine.promptfoo.scripts`), the files import and export write
(:mod:`~coalmine.promptfoo.files`), and a run shown as a table or promptfoo's document
(:mod:`~coalmine.promptfoo.output`).

How imported suites run: ``coalmine import promptfoo`` writes one suite per column (a prompt
run by a provider) under ``harness/evals/``, whose ``<suite>.yaml`` says ``compat: promptfoo``
(:mod:`coalmine.specs.compat`) and whose lines keep each test's promptfoo fields. The eval
engine hands such a line to :mod:`coalmine.promptfoo.suite`, which evaluates it with the
same :func:`coalmine.promptfoo.row.evaluate_row` as ``eval run --promptfoo`` and stores
promptfoo's verdict as an attempt; so the store, resume, comparisons and the judge policy work
as for any suite, and ``--format promptfoo`` rebuilds promptfoo's document from the stored rows
(:mod:`coalmine.promptfoo.stored`).
"""
