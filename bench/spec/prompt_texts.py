"""Prose and data input-grounded tasks of the speculative-decoding prompt set.

Used by bench/spec/make_prompts.py (which holds the code tasks and the open prompts); each entry is
(id, instruction, input) and the expected answer mostly copies the input.
"""

TEXT_TASKS = [
    ("spelling_garden",
     "Fix the spelling mistakes in the following paragraph and repeat the whole paragraph.",
     '''
Last spring my neighbour desided to turn her small backyard into a vegetable garden. She started
by removing the old grass and mixing compost into the soil, wich took most of a weekend. Then she
planted tomatos, beans, carrots and a few rows of lettuce. Every morning befor work she walked
along the beds to check for snails and to water the young plants. By early summer the beans had
climbed up the fence and the lettuce was redy to eat. The tomatos were slower, but in August they
turned red all at once and she had more than she could posibly use. She gave bags of them to
everyone on our street and even made sauce for the winter. Now the whole neighbourhood is talking
about starting a comunity garden in the empty lot near the school, and she has offered to teach
anyone who wants to lern.
'''),
    ("spelling_email",
     "Fix the spelling mistakes in the following email and repeat the whole email.", '''
Hello Mark,

Thank you for your mesage yesterday. I have looked at the report and I beleive the numbers in the
second table are corect, but the chart on page four uses the old data from Febuary. Could you
please update it befor the meeting on Thursday? I would also like to add a short sumary at the
begining, because some of the managers will not have time to read the hole document.

The meeting will start at ten o'clock in the large conferance room on the third floor. Please
bring a printed copy for the guests, and let me know if you need help with the projecter. I will
send the agenda to everybody tomorow morning.

Best regards,
Julia
'''),
    ("spelling_history",
     "Fix the spelling mistakes in the following text and repeat the whole text.", '''
The printing press was invented in Europe around the year 1440 by Johannes Gutenberg, a goldsmith
from the city of Mainz. Before his invension, books were copied by hand, which was slow and
expensive, so only rich familys and monasteries could aford them. Gutenberg combined several
existing ideas: movable metal type, an oil based ink, and a press similar to the ones used for
making wine. His most famous work is a Bible printed in about 1455, and arround fifty copies of it
still exist today. Within a few decades, printing shops apeared in more than two hundred cities.
The price of books fell quickly, more people learned to read, and new ideas could travel much
faster than before. Many historians think the printing press helped to start the Reformation and
the scientific revolution.
'''),
    ("quote_ocean",
     "Quote the following paragraph verbatim, word for word, without changing anything.", '''
The ocean covers about seventy-one percent of the surface of the Earth and holds nearly all of its
water. It is divided into five large basins: the Pacific, the Atlantic, the Indian, the Southern
and the Arctic Ocean. The average depth is close to four kilometres, but the deepest point, in the
Mariana Trench, is almost eleven kilometres below the surface. Sunlight only reaches the top two
hundred metres or so, and below that the water is cold and dark. Even so, scientists keep finding
new kinds of fish, worms and bacteria in the deep sea. The ocean also shapes the weather: warm
currents carry heat from the tropics towards the poles, and the water absorbs a large share of the
carbon dioxide that people release into the air.
'''),
    ("quote_manual",
     "Repeat the following instructions exactly as they are written.", '''
Before you use the coffee machine for the first time, rinse the water tank with clean water and
fill it up to the MAX line. Plug in the machine and press the power button. The light will blink
while the water heats up; this takes about one minute. When the light stays on, place a cup under
the spout. Open the lid, insert one capsule with the foil facing down, and close the lid firmly.
Press the small cup button for an espresso or the large cup button for a long coffee. Do not open
the lid while the coffee is running. After use, remove the capsule and empty the drip tray. Once a
month, run the machine with a descaling solution to remove lime. If the light blinks quickly, the
water tank is empty.
'''),
    ("list_to_json",
     "Reformat the following list as a JSON array of objects with the keys \"name\", "
     "\"city\" and \"age\". Print only the JSON.", '''
- Alice Moreau, Paris, 34
- Bongani Dlamini, Durban, 28
- Chen Wei, Shanghai, 45
- Diego Fernandez, Madrid, 39
- Emma Johansson, Stockholm, 23
- Farid Haddad, Beirut, 51
- Grace Okafor, Lagos, 30
- Hiroshi Tanaka, Osaka, 62
- Ingrid Larsen, Oslo, 27
- Jamal Wright, Chicago, 36
- Katarzyna Nowak, Krakow, 41
- Luca Bianchi, Milan, 33
- Maria Silva, Lisbon, 48
- Nikhil Rao, Pune, 25
'''),
    ("list_to_json_books",
     "Turn the following list of books into a JSON array where each item has \"title\", "
     "\"author\" and \"year\". Print only the JSON.", '''
1. Pride and Prejudice by Jane Austen (1813)
2. Moby-Dick by Herman Melville (1851)
3. Great Expectations by Charles Dickens (1861)
4. Anna Karenina by Leo Tolstoy (1878)
5. The Adventures of Huckleberry Finn by Mark Twain (1884)
6. Dracula by Bram Stoker (1897)
7. The Great Gatsby by F. Scott Fitzgerald (1925)
8. Brave New World by Aldous Huxley (1932)
9. Nineteen Eighty-Four by George Orwell (1949)
10. The Old Man and the Sea by Ernest Hemingway (1952)
11. Things Fall Apart by Chinua Achebe (1958)
12. One Hundred Years of Solitude by Gabriel Garcia Marquez (1967)
'''),
    ("pretty_json_config",
     "Pretty-print the following minified JSON with an indent of 2 spaces. Keep every key and "
     "value the same.", '''
{"server":{"host":"0.0.0.0","port":8080,"workers":4,"timeout_seconds":30,"tls":{"enabled":true,"cert_file":"/etc/ssl/server.crt","key_file":"/etc/ssl/server.key"}},"database":{"driver":"postgres","host":"db.internal","port":5432,"name":"inventory","user":"app","pool":{"min":2,"max":20,"idle_timeout_seconds":300}},"logging":{"level":"info","format":"json","outputs":["stdout","/var/log/app/app.log"]},"features":{"search":true,"recommendations":false,"beta_dashboard":true},"allowed_origins":["https://example.com","https://admin.example.com","http://localhost:3000"],"retry":{"attempts":3,"backoff_ms":[100,500,2000]},"version":"2.7.1"}
'''),
    ("pretty_json_orders",
     "Reformat the following minified JSON so that it is indented and easy to read. Do not "
     "change any value.", '''
[{"order_id":1001,"customer":"Ana Lopez","items":[{"sku":"A-12","name":"Blue mug","qty":2,"price":7.5},{"sku":"B-40","name":"Tea box","qty":1,"price":12.0}],"status":"shipped","paid":true},{"order_id":1002,"customer":"Tom Becker","items":[{"sku":"C-03","name":"Notebook","qty":5,"price":3.2}],"status":"pending","paid":false},{"order_id":1003,"customer":"Mei Ling","items":[{"sku":"A-12","name":"Blue mug","qty":1,"price":7.5},{"sku":"D-77","name":"Desk lamp","qty":1,"price":29.99}],"status":"delivered","paid":true}]
'''),
    ("md_table_to_csv",
     "Convert the following markdown table to CSV. Print only the CSV.", '''
| Country   | Capital    | Population (millions) | Area (km2) | Currency |
|-----------|------------|-----------------------|------------|----------|
| France    | Paris      | 68.0                  | 551695     | Euro     |
| Germany   | Berlin     | 84.4                  | 357588     | Euro     |
| Japan     | Tokyo      | 124.5                 | 377975     | Yen      |
| Brazil    | Brasilia   | 203.1                 | 8515767    | Real     |
| Kenya     | Nairobi    | 55.1                  | 580367     | Shilling |
| Canada    | Ottawa     | 40.1                  | 9984670    | Dollar   |
| India     | New Delhi  | 1428.6                | 3287263    | Rupee    |
| Australia | Canberra   | 26.6                  | 7692024    | Dollar   |
| Mexico    | Mexico City| 128.5                 | 1964375    | Peso     |
| Norway    | Oslo       | 5.5                   | 385207     | Krone    |
'''),
    ("md_table_to_csv_sales",
     "Convert the following markdown table into CSV format with a header line. "
     "Print only the CSV.", '''
| Month     | Region | Units sold | Revenue (USD) | Returns |
|-----------|--------|------------|---------------|---------|
| January   | North  | 1200       | 36000         | 14      |
| January   | South  | 950        | 28500         | 9       |
| February  | North  | 1320       | 39600         | 17      |
| February  | South  | 1010       | 30300         | 11      |
| March     | North  | 1485       | 44550         | 20      |
| March     | South  | 1190       | 35700         | 8       |
| April     | North  | 1400       | 42000         | 15      |
| April     | South  | 1250       | 37500         | 12      |
| May       | North  | 1610       | 48300         | 22      |
| May       | South  | 1330       | 39900         | 10      |
'''),
    ("csv_to_md_table",
     "Convert the following CSV into a markdown table. Print only the table.", '''
id,product,category,price,in_stock
1,Wireless mouse,Electronics,24.99,yes
2,Mechanical keyboard,Electronics,89.00,yes
3,Desk chair,Furniture,149.50,no
4,Standing desk,Furniture,399.00,yes
5,USB-C cable,Electronics,9.99,yes
6,Monitor arm,Accessories,59.90,no
7,Notebook pack,Stationery,12.40,yes
8,Gel pens,Stationery,6.75,yes
9,Webcam,Electronics,64.00,no
10,Laptop stand,Accessories,34.95,yes
11,Desk lamp,Furniture,42.00,yes
12,Headphones,Electronics,119.00,yes
'''),
    ("translate_headers",
     "Translate only the column headers of the following markdown table into French. "
     "Repeat all the rows unchanged.", '''
| Name            | Department  | Start date | Salary | Office   |
|-----------------|-------------|------------|--------|----------|
| Olivia Brown    | Sales       | 2019-03-01 | 52000  | London   |
| Noah Schmidt    | Engineering | 2020-07-15 | 71000  | Berlin   |
| Sofia Rossi     | Marketing   | 2018-11-20 | 48000  | Rome     |
| Liam Murphy     | Engineering | 2021-01-04 | 69000  | Dublin   |
| Aisha Khan      | Finance     | 2017-05-30 | 64000  | London   |
| Lucas Martin    | Support     | 2022-09-12 | 39000  | Lyon     |
| Yuki Sato       | Engineering | 2016-02-08 | 83000  | Tokyo    |
| Emma Wilson     | Sales       | 2023-04-17 | 45000  | New York |
'''),
    ("sort_names",
     "Sort the following list of names in alphabetical order and repeat the sorted list, "
     "one name per line.", '''
Theodore Blake
Amelia Carter
Sebastian Nguyen
Charlotte Evans
Benjamin Hughes
Zoe Patel
Oliver Grant
Isabella Moreno
Henry Walsh
Mia Fischer
Jack Robinson
Ava Thompson
Leo Kowalski
Grace Murphy
Samuel Owusu
Chloe Dubois
Daniel Kim
Ruby Anderson
William Clarke
Lily Svensson
Ethan Brooks
Hannah Weber
Max Rodriguez
Nora Lindqvist
Felix Bauer
Elena Petrova
Adam Novak
Julia Costa
Oscar Hall
Victoria Lane
Patrick Doyle
Sara Haddad
Marcus Lee
Irene Vasquez
Tobias Wolff
Naomi Berg
Carlos Mendes
Fiona Reid
George Adams
Karen Holt
'''),
    ("bullets_to_numbered",
     "Rewrite the following bullet list as a numbered list. Keep the text of every item "
     "exactly the same.", '''
- Check that the emergency exits are not blocked.
- Test the smoke detectors in every room and replace weak batteries.
- Make sure every fire extinguisher has been inspected this year.
- Print the evacuation map and hang it next to each door.
- Update the phone list of the floor wardens.
- Remind all staff where the meeting point outside the building is.
- Store flammable liquids in the locked metal cabinet.
- Switch off and unplug heaters at the end of the day.
- Keep the first aid kit stocked with bandages, gloves and plasters.
- Record the date of the fire drill in the safety log.
- Report any broken lights on the staircase to the building manager.
- Review this checklist again in six months.
'''),
    ("replace_name_story",
     "Repeat the following story exactly, but replace the name Tom with Maria everywhere.", '''
Tom woke up early on Saturday because he had promised to help his grandmother move her books.
He packed sandwiches, filled a bottle with water and rode his bicycle across town. When Tom
arrived, his grandmother was already waiting at the door with a pile of empty boxes. They worked
all morning, wrapping old photographs in newspaper and stacking the heavy books at the bottom of
each box. At noon they sat on the steps and ate the sandwiches. His grandmother told Tom stories
about the places where she had bought each book, from a tiny shop in Lisbon to a market in Cairo.
In the afternoon the van came and two men carried the boxes away. Tom rode home tired but happy,
and that evening he started reading one of the books she had given him as a thank you.
'''),
    ("yaml_to_json",
     "Convert the following YAML document to JSON with the same keys and values. "
     "Print only the JSON.", '''
name: weekly-report
schedule: "0 7 * * MON"
enabled: true
owner:
  team: analytics
  email: analytics@example.com
inputs:
  - name: sales
    source: warehouse.sales_daily
    days: 7
  - name: traffic
    source: warehouse.web_sessions
    days: 7
  - name: returns
    source: warehouse.returns
    days: 14
output:
  format: pdf
  recipients:
    - ceo@example.com
    - cfo@example.com
    - sales-leads@example.com
  subject: "Weekly business report"
retries: 2
timeout_minutes: 45
tags:
  - reporting
  - weekly
  - finance
'''),
]
