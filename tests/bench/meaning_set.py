"""The labelled set of bench_memory_meaning: a team's facts, each a section of team
knowledge, and a question about it in other words (a paraphrase: the question avoids
the section's distinctive words, as a person who forgot them would ask)."""

from __future__ import annotations

#: (topic, section heading and body, the question that should find it)
FACTS: list[tuple[str, str, str]] = [
    (
        "infra",
        "## Storage\nWe run Postgres 16 on db-1; nightly dumps go to the backup bucket.",
        "which database do we use",
    ),
    (
        "infra",
        "## Cache\nRedis on cache-2 holds sessions; it is flushed on every release.",
        "where are login sessions kept in memory",
    ),
    (
        "infra",
        "## Queue\nBackground jobs go through RabbitMQ; the worker pool has eight consumers.",
        "what message broker handles async tasks",
    ),
    (
        "infra",
        "## DNS\nThe resolver is 10.0.0.53; internal names end in .corp.",
        "how are hostnames looked up internally",
    ),
    (
        "infra",
        "## Monitoring\nGrafana dashboards read Prometheus; alerts page the on-call.",
        "where can I see charts of system health",
    ),
    (
        "infra",
        "## Logs\nApplication logs ship to Loki and are kept fourteen days.",
        "how long do we retain output from the services",
    ),
    (
        "infra",
        "## Certificates\nTLS certs renew through Let's Encrypt every sixty days.",
        "when do the https credentials expire",
    ),
    (
        "infra",
        "## Kubernetes\nProduction runs on a three-node k8s cluster in Frankfurt.",
        "what container orchestration hosts the live app",
    ),
    (
        "process",
        "## Releases\nShip with make release after CI is green; Friday releases need Bob.",
        "how do I deploy to production",
    ),
    (
        "process",
        "## Code review\nEvery pull request needs one approval from another engineer.",
        "who must sign off before merging changes",
    ),
    (
        "process",
        "## Incidents\nOpen a sev ticket, start a bridge call, post updates every 30 minutes.",
        "what do we do when the site goes down",
    ),
    (
        "process",
        "## Holidays\nBook time off in BambooHR at least two weeks ahead.",
        "how do I request vacation",
    ),
    (
        "process",
        "## Expenses\nReceipts go to Expensify within thirty days of purchase.",
        "how do I get reimbursed for something I paid for",
    ),
    (
        "process",
        "## Onboarding\nNew hires get a MacBook and a buddy for their first month.",
        "what does a new employee receive when they join",
    ),
    (
        "process",
        "## Standup\nThe daily sync is at 9:30 in the Maple room, fifteen minutes.",
        "when is the morning team meeting",
    ),
    (
        "process",
        "## Retros\nEvery second Friday we look back at the sprint over pizza.",
        "how often do we reflect on how the iteration went",
    ),
    (
        "process",
        "## Hiring\nCandidates do a take-home exercise, then a pairing interview.",
        "what is the recruitment process for engineers",
    ),
    (
        "process",
        "## Security training\nPhishing awareness course is mandatory every year.",
        "is there a compulsory course about suspicious emails",
    ),
    (
        "product",
        "## Pricing\nThe Pro plan costs 20 euros a month per seat; annual gets two months free.",
        "how much does the paid tier cost",
    ),
    (
        "product",
        "## Refunds\nCustomers may cancel within fourteen days for their money back.",
        "can a client get reimbursed after buying",
    ),
    (
        "product",
        "## Roadmap\nQ1 is the mobile app, Q2 single sign-on, Q3 reporting.",
        "what features are planned for next year",
    ),
    (
        "product",
        "## Trial\nA free trial lasts thirty days and needs no card.",
        "how long can people test it without paying",
    ),
    (
        "product",
        "## Support hours\nThe help desk answers 8 to 18 CET on weekdays.",
        "when can customers reach our service team",
    ),
    (
        "product",
        "## Languages\nThe interface is translated into German, French and Spanish.",
        "which locales does the UI support",
    ),
    (
        "people",
        "## Alice\nAlice leads the data team and works from Lisbon.",
        "who is in charge of analytics and where is she based",
    ),
    (
        "people",
        "## Bob\nBob approves releases and owns the billing service.",
        "who is responsible for invoicing code",
    ),
    (
        "people",
        "## Carol\nCarol is the designer; she prefers Figma comments over chat.",
        "how does our UX person like to get feedback",
    ),
    (
        "people",
        "## Dan\nDan is on parental leave until March.",
        "which colleague is away caring for a newborn",
    ),
    (
        "people",
        "## Erin\nErin runs customer success and speaks Japanese.",
        "who manages client relationships",
    ),
    (
        "office",
        "## Office\nThe office is at Karl-Marx-Allee 90, third floor, code 4711.",
        "what is our workplace address",
    ),
    ("office", "## Lunch\nThe team orders food together on Thursdays.", "when do we eat together"),
    (
        "office",
        "## Parking\nThere are four spots in the courtyard, booked on the wiki.",
        "where can I leave my car",
    ),
    (
        "office",
        "## Wifi\nThe guest network is Visitors and its password changes monthly.",
        "how do guests get internet access",
    ),
    (
        "office",
        "## Printer\nThe printer on the third floor needs a badge to release jobs.",
        "how do I get paper copies of documents",
    ),
    (
        "tools",
        "## Password manager\nShared credentials live in 1Password vaults per team.",
        "where are secrets stored for the group",
    ),
    (
        "tools",
        "## Chat\nUrgent questions go to #help; #random is for everything else.",
        "which channel should I ask for assistance in",
    ),
    (
        "tools",
        "## Tickets\nBugs are filed in Linear with a reproduction and a severity.",
        "where do we track defects",
    ),
    (
        "tools",
        "## Docs\nDesign documents are written in Notion under Engineering.",
        "where are technical proposals kept",
    ),
    (
        "tools",
        "## Laptops\nIT reimages a machine within a day if it is lost or stolen.",
        "what happens if my computer goes missing",
    ),
    (
        "data",
        "## Warehouse\nAnalytics tables are in BigQuery, refreshed hourly by dbt.",
        "where does reporting data live",
    ),
    (
        "data",
        "## Privacy\nPersonal data is deleted ninety days after an account closes.",
        "how long do we keep customer information after they leave",
    ),
    (
        "data",
        "## Backups\nSnapshots are restored once a quarter to prove they work.",
        "do we test recovering from copies",
    ),
    (
        "finance",
        "## Budget\nThe team budget for cloud spend is 12,000 euros a month.",
        "how much can we spend on hosting",
    ),
    (
        "finance",
        "## Invoices\nSupplier bills are paid on the 15th and the last day of the month.",
        "when do vendors get their money",
    ),
    (
        "finance",
        "## Travel\nTrain is preferred for trips under six hours; flights need approval.",
        "what are the rules for business journeys",
    ),
]
