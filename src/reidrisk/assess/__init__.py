"""reidrisk.assess: the disclosure-risk check of a data holder's own table.

Which records of a microdata table are at risk of re-identification, how much, why, and what
would lower it: class sizes (fk, Fk), individual and global risk, l-diversity and t-closeness,
SUDA, the prosecutor / journalist / marketer attacker models, population-uniqueness estimators and
paper 000's model. Definitions and their sources: docs/design/assess.md.
"""
