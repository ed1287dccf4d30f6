"""The `paper` protocol's steps: what the HCQR authors' default prompts ask for, in the same order, in our own
words (hypothesis by elimination, queries from the hypothesis without the option list, an answer that reasons
over documents placed before the question), and CHR's hypotheses in a specialist's voice."""

from __future__ import annotations

import dspy


class HypothesizeByElimination(dspy.Signature):
    """Work through this multiple-choice {domain} question option by option, ruling options out, before you settle
    on a working hypothesis. Then state it: the features that separate the options, the most likely option (its
    letter, and its text copied exactly), a short reason, the facts a {source} would state if it is right, and the
    runner-up letter if you are unsure."""

    question: str = dspy.InputField()
    options: str = dspy.InputField(desc="one option per line, 'LETTER. text'")
    elimination: str = dspy.OutputField(desc="step-by-step reasoning about each option, before any conclusion")
    discriminating_features: list[str] = dspy.OutputField(desc="2-3 features that separate the options")
    best_guess: str = dspy.OutputField(desc="the letter of the most likely option")
    best_guess_text: str = dspy.OutputField(desc="that option's text, copied exactly")
    reasoning: str = dspy.OutputField(desc="one or two sentences on why it is the best answer")
    confirming_evidence: list[str] = dspy.OutputField(desc="1-3 specific facts that would confirm it")
    alternative: str = dspy.OutputField(desc="the runner-up letter if you are uncertain, else empty")


class QueriesFromHypothesis(dspy.Signature):
    """Write exactly three search queries for a {corpus} from a question and a working hypothesis about its answer:
    the first seeks evidence for the hypothesised answer along its main line of reasoning, the second the criteria
    that tell the leading candidate answers apart, the third the specific key features or facts the question
    turns on."""

    question: str = dspy.InputField()
    hypothesis: str = dspy.InputField(desc="the hypothesised answer, why, the evidence that would confirm it, and "
                                           "the features that separate the options")
    support_query: str = dspy.OutputField(desc="evidence for the hypothesised answer")
    distinction_query: str = dspy.OutputField(desc="criteria separating the top candidate answers")
    key_features_query: str = dspy.OutputField(desc="the question's specific key features or facts")


class AnswerFromDocuments(dspy.Signature):
    """Here are documents, then a multiple-choice {domain} question and its choices. Using the documents where
    they help, think step by step, then give the letter of the single best choice."""

    context: str = dspy.InputField(desc="relevant documents, numbered")
    question: str = dspy.InputField()
    options: str = dspy.InputField(desc="the choices, one per line, 'LETTER. text'")
    answer: str = dspy.OutputField(desc="the letter of the chosen option")


class SpecialistContrastiveHypotheses(dspy.Signature):
    """You are a {domain} specialist. For this multiple-choice question, state two hypotheses as {domain} facts,
    not letters: the target (the most likely correct answer and why it fits the question) and the mimic (the most
    plausible wrong answer, stated so that it would fit if it were right). One sentence each."""

    question: str = dspy.InputField()
    options: str = dspy.InputField(desc="one option per line, 'LETTER. text'; may be empty")
    target_hypothesis: str = dspy.OutputField(desc="one sentence stating the likely answer as a {domain} fact")
    mimic_hypothesis: str = dspy.OutputField(desc="one sentence stating the strongest wrong answer as a fact")
