"""promptfoo compatibility (issue 9): read a promptfoo config, score as promptfoo scores.

Pure code, no network and no subprocess (the runner calls agents, and Node.js for JavaScript:
:mod:`coalmine.runner.node`). What is here, each checked against promptfoo 0.121.20's own
output:

- reading a config into a test matrix (:mod:`~coalmine.promptfoo.config` and the modules it
  uses: prompts, providers, tests files and CSV, vars expansion, ``defaultTest``, scenarios);
- rendering templates as Nunjucks does (:mod:`~coalmine.promptfoo.nunjucks`);
- promptfoo's scoring rules for a row (:mod:`~coalmine.promptfoo.scoring`);
- which coalmine grader grades each assertion type (:mod:`~coalmine.promptfoo.assertions`);
- which coalmine agent stands for each provider (:mod:`~coalmine.promptfoo.providers`);
- promptfoo's output document, built from coalmine's rows (:mod:`~coalmine.promptfoo.report`).

How imported suites run (the part still to build): ``coalmine import promptfoo`` writes one
suite per prompt × provider under ``harness/evals/``, whose ``<suite>.yaml`` says
``compat: promptfoo`` (the prompt as its ``prompt_template``, the mapped agent, where it came
from) and whose lines keep each test's promptfoo fields (``vars``, ``assert``, ``threshold``,
``metric``, ``options``, ``provider_output``, ``description``, the test index). The eval engine
runs such a suite with Nunjucks rendering, the assertions graded through the mapping (and Node
for ``javascript``), transforms applied, and the row scored by ``scoring``; so the store,
resume, comparisons and calibrated judges work as for any suite, and ``--format promptfoo``
rebuilds promptfoo's document from the stored rows. ``eval run --promptfoo CONFIG`` imports
into a scratch folder and runs that.
"""
