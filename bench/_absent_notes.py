"""A personal-notes workspace and two sets of questions about it, for ``bench_absent.py``.

The workspace is what one person's agent memory looks like after two months: a curated
``MEMORY.md`` of bullets and dated daily notes (work, home, health, travel). The
questions were written before any run:

* :data:`PRESENT` — the answer is in the notes (question → a text the hit must show);
  about a third paraphrase the note instead of using its words. "What coffee do I order"
  was first written as an absent question ("… at the airport"); the coffee preference
  answers it, so it was moved here after the first run.
* :data:`ABSENT` — nothing in the notes answers them, but most share an everyday word
  with some note ("order", "book", "car", "train", "doctor", "password"), which is how a
  keyword match on one common word passes for an answer.
"""

from __future__ import annotations

MEMORY = """# Memory

## Preferences

- Coffee: a double espresso in the morning, a cortado after lunch; never decaf.
- Tea: peppermint in the evening.
- Seats: window seat on trains, aisle seat on flights.
- Prefers written updates over meetings; no calls before 9:30.
- Vegetarian; eats eggs and cheese, no fish.
- Music while coding: lo-fi or Bach's cello suites.

## People

- Priya Nair: partner; birthday 3 May; allergic to cats.
- Tom Becker: manager since January 2026; one-on-one every Monday at 11:00.
- Sofia Lindqvist: tech lead of the search team, Stockholm office.
- Dad (Martin): lives in Leipzig, retired train driver, calls on Sundays.
- Dr. Hassan: family doctor, Praxis am Markt, open Monday to Thursday.
- Kenji: neighbour in 4B, has a spare key to the flat.

## Setup

- Laptop: MacBook Pro 14 (M3); the work laptop is a Dell XPS with Ubuntu 24.04.
- Editor: VS Code with the Vim extension, Solarized Light theme.
- Shell: zsh with oh-my-zsh; dotfiles on GitLab.
- Password manager: Bitwarden, shared folder "Home" with Priya.
- Phone: Pixel 8; two-factor codes in Aegis.

## Home

- Rent 1,450 euros, paid on the 1st by standing order.
- Internet: fibre from Deutsche Glasfaser, contract ends August 2027.
- Bins: paper on Tuesdays, plastic every second Thursday.
- Landlord: Mr. Vogel, prefers email.

## Health

- Allergic to ibuprofen (asthma attack in 2021); paracetamol is fine.
- Contact lenses: monthly, -3.25 both eyes; eye check every two years.
- Back pain: the physio's stretches every evening, 10 minutes.
"""

DAYS = {
    "2026-09-02": """## Project Atlas kickoff

Kicked off Atlas with Sofia and Tom: rewrite the product search ranking. Today it is a
hand-tuned Elasticsearch query that nobody dares to touch. Target: launch before the
Christmas traffic, so code freeze on 1 December.

I own the evaluation harness and the offline metrics; Sofia owns the ranking model.
Open question: where do we get relevance judgements? Tom will ask the merchandising team.
""",
    "2026-09-05": """## New bike

Bought a used road bike, a Canyon Endurace, for 900 euros from a guy in Pankow. First
ride on Sunday: 40 km to Potsdam and back, average 24 km/h. The saddle is too hard,
need to swap it.
""",
    "2026-09-09": """## Checkout outage

Checkout was down for 45 minutes in the afternoon. Root cause: the TLS certificate of
the payment gateway expired and nobody got an alert. Customers saw "payment failed" and
support got 300 tickets.

Action items from the postmortem: certificate expiry monitoring with a 30-day warning,
a runbook for rotating the gateway certificate (mine, due 23 September), and a status
page message template.
""",
    "2026-09-12": """## Home office

Ordered a standing desk, a Flexispot E7 with a bamboo top, 560 euros; delivery in three
weeks. Also ordered a monitor arm. Work pays half of the desk up to 300 euros.

## Dinner

Booked a table at Lokal for our anniversary on 20 September, 19:30.
""",
    "2026-09-15": """## Car

The Golf failed its inspection (TÜV) because of worn brake pads and a cracked number
plate light. The garage on Seestraße replaces both on 18 September; quote 320 euros.
""",
    "2026-09-18": """## Atlas: evaluation plan

Decided on a hybrid of BM25 and embeddings for retrieval, re-ranked by the model.
Evaluation set: 500 real queries with graded judgements from the merchandising team.
Sofia wants nDCG@10 as the main metric, with zero-result rate as a guard.
""",
    "2026-09-22": """## Flat

The heating does not start; Mr. Vogel sends a technician on Thursday morning.

## Book club

Joined the book club at Anna's: we read "The Remains of the Day" this month. Meets on
the last Friday of the month at 19:00.
""",
    "2026-09-26": """## Copenhagen trip

Planned the Copenhagen trip with Priya for 16 to 19 October: train via Hamburg, hotel
in Vesterbro, budget about 1,200 euros for both. Priya wants to see Louisiana, the art
museum north of the city; I want a day of cycling.
""",
    "2026-09-30": """## Performance review

Review with Tom: rating "exceeds expectations", a raise of 6% from January. Goal for
next year: mentor the two new juniors, Lea and Omar, and give one talk at the internal
tech conference.
""",
    "2026-10-03": """## Dad's visit

Dad came for the weekend. Took him to the railway museum, he explained every engine.
He needs new hearing aids; booked an appointment at Amplifon for 14 October.
""",
    "2026-10-07": """## Atlas shadow traffic

First shadow traffic test: the new ranking answers with a p95 latency of 180 ms, too
slow for the 100 ms budget. Plan: cache the embeddings of the 10,000 most popular
queries and move the re-ranker to a smaller model.
""",
    "2026-10-10": """## Running

Signed up for the Berlin half marathon in April 2027. Training plan: three runs a week,
one long run on Sundays, building up to 18 km by March.
""",
    "2026-10-14": """## Gym

Cancelled the FitX membership; the last day is 31 October. The cancellation
confirmation came by email, saved in the "Contracts" folder.
""",
    "2026-10-21": """## Copenhagen recap

Back from Copenhagen. Louisiana was the highlight; the cycling day was rained out.
Spent about 1,050 euros. Priya bought a ceramic vase at a market in Nørrebro.
""",
    "2026-10-24": """## Quarterly planning

Team priorities for the quarter: launch Atlas, new on-call rotation (weekly, handover on
Wednesdays at 10:00), and retire the old CSV export. I take the first on-call week.
""",
}

FILES = {"MEMORY.md": MEMORY} | {
    f"memory/{day}.md": f"# {day}\n\n{text}" for day, text in DAYS.items()
}

PRESENT = {
    "what coffee do I order": "espresso",
    "how do I take my coffee": "espresso",
    "what coffee do I drink after lunch": "cortado",
    "am I allergic to any painkillers": "ibuprofen",
    "which painkiller can I take": "paracetamol",
    "when is my one-on-one with my manager": "Monday",
    "who has a spare key to the flat": "Kenji",
    "what bike did I buy": "Canyon",
    "why did checkout go down": "certificate",
    "when does the internet contract end": "August 2027",
    "which day is the paper bin collected": "Tuesdays",
    "when are we going to Copenhagen": "16 to 19 October",
    "where are we staying in Copenhagen": "Vesterbro",
    "what raise did I get": "6%",
    "when is dad's hearing aid appointment": "14 October",
    "where does my father live": "Leipzig",
    "what is the p95 latency of Atlas": "180 ms",
    "which half marathon did I sign up for": "Berlin",
    "when does the gym membership end": "31 October",
    "who leads the search team": "Sofia",
    "what metric does Sofia want for Atlas": "nDCG",
    "why did the car fail its inspection": "brake pads",
    "what is the book club reading": "Remains of the Day",
    "when is the on-call handover": "Wednesdays",
    "what editor do I use": "VS Code",
    "how much is the rent": "1,450",
    "what kind of contact lenses do I wear": "monthly",
    "what standing desk did I order": "Flexispot",
    "which juniors will I mentor": "Lea and Omar",
    "what did the outage postmortem decide": "monitoring",
    "what do I listen to while programming": "lo-fi",
    "where did we book the anniversary dinner": "Lokal",
    "what is Priya allergic to": "cats",
}

ABSENT = [
    "what did I order at the sushi place",
    "what is my sister's name",
    "which dentist do I go to",
    "what size shoes do I wear",
    "what is my blood type",
    "when did I last visit my grandmother",
    "which piano teacher did I hire",
    "what is the wifi password at the office",
    "what is my gym locker number",
    "where did we go skiing last winter",
    "what time does the bakery open",
    "what did the vet say about the dog",
    "how much did the new sofa cost",
    "when does my driving licence expire",
    "what is the name of my yoga teacher",
    "which bank holds my savings account",
    "what is my tax ID number",
    "when is the next parents' evening at school",
    "what book did my brother recommend",
    "what present did I buy for my niece",
    "which train do I take to the airport",
    "what was the score of the football match",
    "where did I park the car at the airport",
    "how many vacation days do I have left",
    "what did the doctor say about my cholesterol",
    "which hotel did we stay at in Rome",
    "what flowers did I plant on the balcony",
    "what was the topic of my master's thesis",
    "who won the office chess tournament",
    "what did the electrician say about the kitchen lights",
    "which language course did I sign up for",
]
